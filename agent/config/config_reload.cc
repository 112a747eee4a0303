#include "agent/config/config_reload.h"

#include <algorithm>

namespace hostport::agent::config {
namespace {

const core::PoolSpec* findPool(const AgentConfig& config, const std::string& name) {
  const auto found = std::ranges::find(config.pools, name, &core::PoolSpec::name);
  return found == config.pools.end() ? nullptr : &*found;
}

/// The top-level keys, by the name they have in the YAML file, and whether they differ.
std::vector<std::string> changedTopLevelKeys(const AgentConfig& a, const AgentConfig& b) {
  std::vector<std::string> keys;
  const auto check = [&](const char* key, bool differs) {
    if (differs) keys.emplace_back(key);
  };
  check("stateDir", a.stateDir != b.stateDir);
  check("socket", a.socketPath != b.socketPath);
  check("reserveLocalPorts", a.reserveLocalPorts != b.reserveLocalPorts);
  check("procSysNet", a.procSysNet != b.procSysNet);
  check("logLevel", a.logLevel != b.logLevel);
  check("logFormat", a.logFormat != b.logFormat);
  check("compactAfterJournalBytes", a.compactAfterJournalBytes != b.compactAfterJournalBytes);
  check("tableRepairSeconds", a.tableRepairSeconds != b.tableRepairSeconds);
  check("vanishedGraceSeconds", a.vanishedGraceSeconds != b.vanishedGraceSeconds);
  check("releaseSpool", a.releaseSpool != b.releaseSpool);
  check("allowEmptyGc", a.allowEmptyGc != b.allowEmptyGc);
  check("emptyGcMaxLeases", a.emptyGcMaxLeases != b.emptyGcMaxLeases);
  check("metricsAddress", a.metricsAddress != b.metricsAddress);
  check("chainCni", a.chainCni != b.chainCni);
  check("cniConfDir", a.cniConfDir != b.cniConfDir);
  check("cniBinDir", a.cniBinDir != b.cniBinDir);
  check("replacePortmap", a.replacePortmap != b.replacePortmap);
  check("podSocket", a.podSocketPath != b.podSocketPath);
  check("kubeconfig", a.kubeconfig != b.kubeconfig);
  check("nodeName", a.nodeName != b.nodeName);
  check("apiQps", a.apiQps != b.apiQps);
  check("apiBurst", a.apiBurst != b.apiBurst);
  check("capacitySeconds", a.capacitySeconds != b.capacitySeconds);
  return keys;
}

}  // namespace

ReloadPlan planReload(const AgentConfig& running, const AgentConfig& next) {
  ReloadPlan plan;
  plan.needRestart = changedTopLevelKeys(running, next);
  for (const auto& pool : running.pools) {
    const core::PoolSpec* wanted = findPool(next, pool.name);
    const std::string prefix = "pools." + pool.name;
    if (wanted == nullptr) {
      plan.needRestart.push_back(prefix + " (removed)");
      continue;
    }
    if (wanted->ranges != pool.ranges) plan.needRestart.push_back(prefix + ".ranges");
    if (wanted->protocols != pool.protocols) plan.needRestart.push_back(prefix + ".protocols");
    if (wanted->strategy != pool.strategy) plan.needRestart.push_back(prefix + ".strategy");
    if (wanted->reuseDelaySeconds != pool.reuseDelaySeconds) {
      plan.needRestart.push_back(prefix + ".reuseDelaySeconds");
    }
    if (wanted->rules != pool.rules) plan.rules.emplace_back(pool.name, wanted->rules);
  }
  for (const auto& pool : next.pools) {
    if (findPool(running, pool.name) == nullptr) {
      plan.needRestart.push_back("pools." + pool.name + " (added)");
    }
  }
  return plan;
}

void applyPlan(AgentConfig& running, const ReloadPlan& plan) {
  for (const auto& [name, rules] : plan.rules) {
    const auto found = std::ranges::find(running.pools, name, &core::PoolSpec::name);
    if (found != running.pools.end()) found->rules = rules;
  }
}

}  // namespace hostport::agent::config
