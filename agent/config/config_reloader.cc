#include "agent/config/config_reloader.h"

#include "agent/log/event_log.h"

namespace hostport::agent::config {
namespace {

using log::Component;
using log::Level;

std::string joined(const std::vector<std::string>& items) {
  std::string out;
  for (const auto& item : items) out += (out.empty() ? "" : ",") + item;
  return out;
}

}  // namespace

Result<ReloadPlan> ConfigReloader::reload(std::string_view trigger) {
  std::lock_guard lock(mutex_);
  auto next = resolveConfig(flags_);
  if (!next) {
    log::event(Component::kAgent, Level::kError, "agent.reload_failed",
               {{"trigger", trigger},
                {"cause", next.error().message},
                {"kept", "the running configuration"}});
    return std::unexpected(next.error());
  }
  ReloadPlan plan = planReload(running_, *next);
  ReloadPlan applied{{}, plan.needRestart};
  std::vector<std::string> changedPools;
  for (const auto& [pool, rules] : plan.rules) {
    // The checks resolveConfig() made are the allocator's own, so this fails only on a bug; one
    // pool's failure leaves the others applied, and the next reload tries again.
    if (auto set = apply_(pool, rules); !set) {
      log::event(Component::kAgent, Level::kError, "agent.reload_failed",
                 {{"trigger", trigger}, {"pool", pool}, {"cause", set.error().message}});
      continue;
    }
    applied.rules.emplace_back(pool, rules);
    changedPools.push_back(pool);
  }
  applyPlan(running_, applied);
  if (!plan.needRestart.empty()) {
    log::event(Component::kAgent, Level::kWarn, "agent.reload_needs_restart",
               {{"trigger", trigger}, {"keys", joined(plan.needRestart)}});
  }
  log::event(Component::kAgent, Level::kInfo, "agent.reloaded",
             {{"trigger", trigger},
              {"pools", changedPools.empty() ? std::string("none") : joined(changedPools)},
              {"restart_needed", !plan.needRestart.empty()}});
  return applied;
}

AgentConfig ConfigReloader::running() const {
  std::lock_guard lock(mutex_);
  return running_;
}

}  // namespace hostport::agent::config
