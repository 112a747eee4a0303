#include "agent/daemon/pool_requests.h"

#include <algorithm>

#include "agent/core/rule_counts.h"
#include "agent/log/event_log.h"
#include "annotations/annotation_names.h"

namespace hostport::agent::daemon {
namespace {

using log::Component;
using log::Level;

}  // namespace

PoolRequestCheck::PoolRequestCheck(const std::vector<core::PoolSpec>& pools, pods::NodePods& pods,
                                   publish::Publisher& publisher)
    : poolOf_(core::validatePoolSpecs(pools).value_or(core::PoolOfPort{})),
      pods_(pods),
      publisher_(publisher) {
  for (const core::PoolSpec& pool : pools) poolNames_.push_back(pool.name);
  pods_.listen([this](const pods::PodChange& change) { onChange(change); });
}

void PoolRequestCheck::granted(const Lease& lease) {
  if (lease.pod.uid.empty() || poolOf_.empty()) return;
  PoolPorts taken(poolNames_.size());
  for (std::size_t i = 0; i < taken.size(); ++i) {
    taken[i] = core::portsInPool(lease.ports, poolOf_, i);
  }
  std::lock_guard lock(mutex_);
  PodLeases& held = held_[lease.pod.uid];
  held.leases[lease.key] = std::move(taken);
  checkLocked(lease.pod.uid, held);
}

void PoolRequestCheck::released(const Lease& lease) {
  std::lock_guard lock(mutex_);
  const auto held = held_.find(lease.pod.uid);
  if (held == held_.end()) return;
  held->second.leases.erase(lease.key);
  if (held->second.leases.empty()) held_.erase(held);
}

void PoolRequestCheck::onChange(const pods::PodChange& change) {
  if (!change.after) return;
  std::lock_guard lock(mutex_);
  const auto held = held_.find(change.after->uid);
  if (held != held_.end()) checkLocked(held->first, held->second);
}

void PoolRequestCheck::checkLocked(const std::string& uid, PodLeases& held) {
  const auto pod = pods_.byUid(uid);
  if (!pod || pod->finished() || pod->deleting) return;
  for (std::size_t i = 0; i < poolNames_.size(); ++i) {
    // Per sandbox (its interfaces summed), the largest.
    std::map<std::string_view, uint32_t> bySandbox;
    for (const auto& [key, ports] : held.leases) bySandbox[key.containerId] += ports[i];
    uint32_t taken = 0;
    for (const auto& [sandbox, ports] : bySandbox) taken = std::max(taken, ports);
    const std::string& pool = poolNames_[i];
    const auto request = pod->poolRequests.find(pool);
    const int64_t requested = request == pod->poolRequests.end() ? 0 : request->second;
    if (taken <= requested) continue;
    const std::string figures =
        pool + " " + std::to_string(taken) + " " + std::to_string(requested);
    if (!held.warned.insert(figures).second) continue;
    const std::string resource = std::string(annotations::kResourcePrefix) + pool;
    log::event(Component::kAlloc, Level::kWarn, "alloc.request_below_ports",
               {{"pod", pod->describe()},
                {"uid", uid},
                {"pool", pool},
                {"ports", taken},
                {"requested", requested}});
    publisher_.warn(
        {{pod->namespaceName, pod->name, uid},
         std::string(publish::kPortsNotRequested),
         "the pod takes " + std::to_string(taken) + " ports of pool " + pool + " but requests " +
             std::to_string(requested) + " " + resource +
             ": the scheduler counts the request, so the node may be given more pods than the "
             "pool holds; request " +
             std::to_string(taken) + " " + resource +
             " in a container's resources, or let hostport-admission add it"});
  }
}

}  // namespace hostport::agent::daemon
