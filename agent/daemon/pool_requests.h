#pragma once
// A pod that takes more ports of a pool than its hostport.io/<pool> request (issue 25). The
// scheduler counts pools by the extended resource the pod requests, so such a pod lets the node
// be given more pods than its pool holds, and the one that finds no free port fails at its ADD,
// far from the cause. The admission server adds the request; this catches the pods it did not
// see (created while it was down, or without it), with a Warning Event on the pod naming the
// pool and both numbers, once per pod and figures.
//
// What a pod takes is counted from its leases as the allocator counts (core::portsInPool(): its
// dynamic ports in its pool, a static hostPort in the pool whose range holds it); a pod with
// several interfaces takes each one's, and of two sandboxes (an old one's DEL not seen yet) the
// larger is counted, not their sum. What it requests is the pod watch's (pods::NodePod).
// Judged when a lease is granted and when the pod comes or changes: whichever comes last.

#include <map>
#include <mutex>
#include <set>
#include <string>
#include <vector>

#include "agent/core/pool_spec.h"
#include "agent/pods/node_pods.h"
#include "agent/publish/publisher.h"
#include "lease/lease.h"

namespace hostport::agent::daemon {

class PoolRequestCheck {
 public:
  /// Listens to `pods`; call before the watch starts. `pools` are the agent's (validated).
  PoolRequestCheck(const std::vector<core::PoolSpec>& pools, pods::NodePods& pods,
                   publish::Publisher& publisher);

  /// AgentService::watchLeases()' observers, from the store's thread.
  void granted(const Lease& lease);
  void released(const Lease& lease);

 private:
  /// The ports of each pool one lease takes, by pool index.
  using PoolPorts = std::vector<uint32_t>;
  struct PodLeases {
    std::map<AttachmentKey, PoolPorts> leases;
    std::set<std::string> warned;  // "<pool> <taken> <requested>" already told
  };

  void onChange(const pods::PodChange& change);
  /// Warns about `uid` when it is on the node (the watch has it) and takes more than it requests.
  void checkLocked(const std::string& uid, PodLeases& held);

  std::vector<std::string> poolNames_;
  core::PoolOfPort poolOf_;
  pods::NodePods& pods_;
  publish::Publisher& publisher_;
  std::mutex mutex_;
  std::map<std::string, PodLeases, std::less<>> held_;  // by pod UID
};

}  // namespace hostport::agent::daemon
