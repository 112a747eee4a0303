#pragma once
// What a configuration reload (SIGHUP, or the config file changing) may change while the agent
// runs, and what only a restart applies. Pure: the reloader (config_reloader.h) logs and applies.
//
// A reload applies each pool's rules (namespaces, maxPortsPerNamespace, maxPortsPerPod): they are
// judged per request, and leases are never revoked, so a pool that lost a namespace or whose quota
// went below its use keeps its leases and refuses new requests. Everything else waits for a
// restart, because it was acted on at start: the ranges, protocols, strategy and reuse delay of a
// pool (the reserved ports, the socket probe's filter, the pickers and their order), pools added
// or removed (a lease of a removed pool must keep its ports), and every setting whose row says
// Reload::kRestart (settings.h; today all of them: paths, sockets, logs, the reconciler's timers,
// chaining). Such changes are named, and left alone.

#include <string>
#include <utility>
#include <vector>

#include "agent/config/agent_config.h"
#include "agent/core/pool_rules.h"

namespace hostport::agent::config {

struct ReloadPlan {
  /// The pools whose rules change, with their new rules, in the order of the running config.
  std::vector<std::pair<std::string, core::PoolRules>> rules;
  /// Key paths that changed but need a restart: "socket", "pools.media.ranges",
  /// "pools.games (added)", ...
  std::vector<std::string> needRestart;
  bool empty() const { return rules.empty() && needRestart.empty(); }
};

/// What reloading `next` over `running` would do.
ReloadPlan planReload(const AgentConfig& running, const AgentConfig& next);

/// `running` with the plan's rules in place: the configuration the agent now runs by.
void applyPlan(AgentConfig& running, const ReloadPlan& plan);

}  // namespace hostport::agent::config
