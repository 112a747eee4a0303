#pragma once
// Ports for hostNetwork pods (issue 25). No CNI ADD runs for a pod on the node's network, so the
// pod watch is how the agent learns of one: a hostNetwork pod with hostport.io/ports gets a lease
// keyed by its UID (AttachmentKey::ofHostNetworkPod(); a static pod's, NodePod::sandboxUid()),
// asked as a CNI ADD asks (the pool's rules and quotas, sticky memory, the host-socket check in the
// node's netns), with nothing forwarded: the pod's process binds the host port itself. The
// publisher publishes it on the pod like any other. The lease is released when the pod is deleted
// (or being deleted), leaves the node, finishes (Succeeded, Failed), or stops asking; after each
// list, a lease whose pod the node no longer has (deleted while nobody watched) is released too.
// Ports that cannot be granted are a Warning Event on the pod (no sandbox failed, so the kubelet
// reports nothing), once for each cause.
//
// Runs on the watch's thread (agent/pods/node_pods.h listeners); the service answers on the
// store's thread, and the outcome is logged there.

#include <chrono>
#include <functional>
#include <map>
#include <mutex>
#include <set>
#include <string>
#include <string_view>

#include "agent/core/pool_spec.h"
#include "agent/pods/node_pods.h"
#include "agent/publish/publisher.h"
#include "agent/service/agent_service.h"
#include "lease/lease.h"

namespace hostport::agent::daemon {

class HostNetworkPods {
 public:
  /// Listens to `pods`; call before the watch starts. All three outlive this object's use.
  /// `pools` tells the cluster pools: a pod asking one brings its claims as its containers'
  /// hostPorts (agent/core/cluster_claims.h), which its request then carries.
  HostNetworkPods(service::AgentService& service, pods::NodePods& pods,
                  publish::Publisher& publisher, const std::vector<core::PoolSpec>& pools);

  /// For the hostport.io volume of the pod whose sandbox UID is `sandboxUid`, which the kubelet
  /// mounts before it starts the containers: when the watch knows it as a hostNetwork pod that
  /// asks for ports and holds none yet, asks for them now and waits for the answer, at most
  /// `bound`, so its files have them at its first start. Any other pod (a CNI pod, one the watch
  /// has not seen) returns at once: a CNI pod's ADD writes them.
  void awaitLease(const std::string& sandboxUid, std::chrono::milliseconds bound);

 private:
  void onChange(const pods::PodChange& change);
  /// After a list: the leases of hostNetwork pods the node no longer has, or that no longer ask.
  void sweep();
  /// Asks for `pod`'s ports; `then` runs once the service answered, whatever it said.
  void lease(const pods::NodePod& pod, std::function<void()> then = {});
  void release(std::vector<AttachmentKey> keys, std::string_view why);
  /// Logs a refusal, and tells the pod once for each cause (from the watch's or the store's
  /// thread).
  void refused(const pods::NodePod& pod, const std::string& cause);

  service::AgentService& service_;
  pods::NodePods& pods_;
  publish::Publisher& publisher_;
  std::set<std::string, std::less<>> clusterPools_;
  std::mutex mutex_;
  std::map<std::string, std::string> told_;  // pod UID -> the last cause its Event gave
};

/// Whether `pod` is a hostNetwork pod that asks for ports and holds them now (not finished, not
/// being deleted).
bool wantsHostPorts(const pods::NodePod& pod);

}  // namespace hostport::agent::daemon
