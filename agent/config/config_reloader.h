#pragma once
// Applies a changed configuration to the running agent: on SIGHUP and when the config file
// changes (config_watch.h). What a reload may change is config_reload.h's to say; this reads the
// file again with the same flags on top, refuses a config that does not parse or check (logged,
// and the running one stays), hands each pool's new rules to `apply`, and logs what needs a
// restart. Calls are serialised: a signal and a file change may arrive together.

#include <functional>
#include <mutex>
#include <string>
#include <string_view>

#include "agent/config/agent_config.h"
#include "agent/config/config_reload.h"

namespace hostport::agent::config {

class ConfigReloader {
 public:
  /// Gives one pool's new rules to the running agent (AgentService::setPoolRules).
  using ApplyRules = std::function<Result<void>(const std::string& pool, core::PoolRules rules)>;

  ConfigReloader(CommandLine flags, AgentConfig running, ApplyRules apply)
      : flags_(std::move(flags)), running_(std::move(running)), apply_(std::move(apply)) {}

  /// Reads the configuration again and applies its pool rules. `trigger` ("signal", "file") is
  /// logged. The plan it applied, or why the new config was refused (the running one stays):
  ///  agent.reloaded trigger pools restart_needed, agent.reload_needs_restart keys (warn),
  ///  agent.reload_failed trigger cause (error).
  Result<ReloadPlan> reload(std::string_view trigger);

  /// The configuration the agent runs by now.
  AgentConfig running() const;

 private:
  const CommandLine flags_;
  mutable std::mutex mutex_;
  AgentConfig running_;  // guarded by mutex_
  const ApplyRules apply_;
};

}  // namespace hostport::agent::config
