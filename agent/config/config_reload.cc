#include "agent/config/config_reload.h"

#include <algorithm>

#include "agent/config/settings.h"

namespace hostport::agent::config {
namespace {

const core::PoolSpec* findPool(const AgentConfig& config, const std::string& name) {
  const auto found = std::ranges::find(config.pools, name, &core::PoolSpec::name);
  return found == config.pools.end() ? nullptr : &*found;
}

/// The settings a reload cannot apply whose values differ, by their YAML keys (settings.h).
std::vector<std::string> changedRestartSettings(const AgentConfig& a, const AgentConfig& b) {
  std::vector<std::string> keys;
  for (const Setting& setting : settings()) {
    if (setting.reload == Reload::kRestart && settingText(setting, a) != settingText(setting, b)) {
      keys.emplace_back(setting.key);
    }
  }
  return keys;
}

}  // namespace

ReloadPlan planReload(const AgentConfig& running, const AgentConfig& next) {
  ReloadPlan plan;
  plan.needRestart = changedRestartSettings(running, next);
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
    // The agents and the admission server must agree on who hands a pool's ports out.
    if (wanted->scope != pool.scope) plan.needRestart.push_back(prefix + ".scope");
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
