#include "agent/core/rule_counts.h"

#include <algorithm>

namespace hostport::agent::core {
namespace {

void takeFrom(RuleCounts::Counts& counts, const std::string& key, uint32_t ports) {
  const auto found = counts.find(key);
  if (found == counts.end()) return;
  found->second -= std::min(found->second, ports);
  if (found->second == 0) counts.erase(found);
}

}  // namespace

uint32_t portsInPool(const std::vector<PortGrant>& grants, const PoolOfPort& poolOf,
                     std::size_t pool) {
  uint32_t count = 0;
  for (const auto& grant : grants) {
    for (uint32_t port = grant.hostPort; port < grant.hostPort + uint32_t{grant.count}; ++port) {
      count += poolOf[port] == pool ? 1 : 0;
    }
  }
  return count;
}

uint32_t askedOf(const AllocationRequest& request, const PoolOfPort& poolOf, std::size_t pool,
                 std::size_t requestPool) {
  uint32_t asked = 0;
  if (pool == requestPool) {
    for (const auto& row : request.dynamics) asked += row.count;
  }
  for (std::size_t i = 0; i < request.statics.size(); ++i) {
    const auto& claim = request.statics[i];
    const bool repeated =
        std::any_of(request.statics.begin(), request.statics.begin() + static_cast<long>(i),
                    [&](const StaticPortClaim& earlier) { return earlier == claim; });
    if (!repeated && poolOf[claim.hostPort] == pool) ++asked;
  }
  return asked;
}

RuleCounts::RuleCounts(bool countPods) {
  if (countPods) podUse_.emplace();
}

void RuleCounts::add(const PodIdentity& pod, uint32_t ports) {
  if (ports == 0) return;
  namespaceUse_[pod.namespaceName] += ports;
  if (podUse_) {
    if (const std::string key = podQuotaKey(pod); !key.empty()) (*podUse_)[key] += ports;
  }
}

void RuleCounts::remove(const PodIdentity& pod, uint32_t ports) {
  if (ports == 0) return;
  takeFrom(namespaceUse_, pod.namespaceName, ports);
  if (podUse_) {
    if (const std::string key = podQuotaKey(pod); !key.empty()) takeFrom(*podUse_, key, ports);
  }
}

RuleUsage RuleCounts::usageOf(const PodIdentity& pod) const {
  RuleUsage usage;
  if (const auto found = namespaceUse_.find(pod.namespaceName); found != namespaceUse_.end()) {
    usage.namespaceHeld = found->second;
  }
  if (podUse_) {
    if (const auto found = podUse_->find(podQuotaKey(pod)); found != podUse_->end()) {
      usage.podHeld = found->second;
    }
  }
  return usage;
}

void RuleCounts::countPods(bool on) {
  if (!on) {
    podUse_.reset();
  } else if (!podUse_) {
    podUse_.emplace();
  }
}

void RuleCounts::addPod(const PodIdentity& pod, uint32_t ports) {
  if (!podUse_ || ports == 0) return;
  if (const std::string key = podQuotaKey(pod); !key.empty()) (*podUse_)[key] += ports;
}

}  // namespace hostport::agent::core
