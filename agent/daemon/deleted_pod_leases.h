#pragma once
// Leases of pods the API server no longer has while their sandbox is still there (issue 25): a
// kubelet that died or was cut off before it tore the sandbox down, so no DEL came and the netns
// (still there) keeps the vanished pass away. After vanishedGraceSeconds such a lease is released,
// as a vanished netns's is, with both signals logged (alloc.pod_deleted: what the API says, and
// whether the netns is still there).
//
// A pod missing from the watch's view is not yet proof: the watch may lag, and a pod created after
// the last list reaches the view only by its ADDED event. So a lease's pod counts as deleted only
//  - when the pod left the view after being in it (a DELETED event, or a list that no longer has
//    it), UIDs being never reused;
//  - or when the view comes from a list that started after the lease was granted: the pod existed
//    in the API then (the kubelet makes a sandbox only for a pod bound to its node), and is not in
//    it, nor has the watch brought it back since.
// A pod being deleted (deletionTimestamp) still runs and keeps its ports until it is gone. A static
// pod is known by its mirror's kubernetes.io/config.mirror (NodePods::hasSandboxUid()). hostNetwork
// leases are HostNetworkPods' to release.
//
// Judged on a thread of its own, woken by lists and pods leaving the view and when a grace ends,
// at most once a second.

#include <chrono>
#include <condition_variable>
#include <map>
#include <mutex>
#include <optional>
#include <set>
#include <string>
#include <thread>

#include "agent/pods/node_pods.h"
#include "agent/service/agent_service.h"
#include "lease/lease.h"

namespace hostport::agent::daemon {

class DeletedPodLeases {
 public:
  using Clock = std::chrono::steady_clock;

  /// Listens to `pods`; call before the watch starts, and before anything is granted. The leases
  /// `service` holds now count as granted before any list.
  DeletedPodLeases(service::AgentService& service, pods::NodePods& pods,
                   std::chrono::milliseconds grace);
  ~DeletedPodLeases();  // stops the thread
  DeletedPodLeases(const DeletedPodLeases&) = delete;
  DeletedPodLeases& operator=(const DeletedPodLeases&) = delete;

  void start();
  /// Stops the thread and joins it. Idempotent.
  void stop();
  /// AgentService::watchLeases()' observers, from the store's thread.
  void granted(const Lease& lease);
  void released(const Lease& lease);

  /// One judgement now, on the calling thread (tests); the thread calls it when woken.
  void pass(Clock::time_point now);

 private:
  void run(std::stop_token stop);
  /// Why the pod of `lease` counts as deleted ("left_view", "not_listed"), or nullopt.
  std::optional<std::string_view> deletedBecause(const Lease& lease) const;

  service::AgentService& service_;
  pods::NodePods& pods_;
  const std::chrono::milliseconds grace_;
  mutable std::mutex mutex_;
  std::condition_variable_any wake_;
  bool woken_ = false;  // a list, or a pod left the view, since the last pass
  uint64_t wakes_ = 0;  // counted, so a wait ends at each
  std::map<AttachmentKey, Clock::time_point> grantedAt_;  // since this start; older: before it
  std::set<std::string, std::less<>> leftView_;           // UIDs of pods that left the view
  std::map<AttachmentKey, Clock::time_point> deletedSince_;
  std::jthread thread_;
};

}  // namespace hostport::agent::daemon
