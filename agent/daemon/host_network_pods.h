#pragma once
// Ports for hostNetwork pods (issue 25). No CNI ADD runs for a pod on the node's network, so the
// pod watch is how the agent learns of one: a hostNetwork pod with hostport.io/ports gets a lease
// keyed by its UID (AttachmentKey::ofHostNetworkPod()), asked as a CNI ADD asks (the pool's rules
// and quotas, sticky memory, the host-socket check in the node's netns), with nothing forwarded:
// the pod's process binds the host port itself. The publisher publishes it on the pod like any
// other. The lease is released when the pod is deleted (or being deleted), leaves the node,
// finishes (Succeeded, Failed), or stops asking; after each list, a lease whose pod the node no
// longer has (deleted while nobody watched) is released too.
//
// Runs on the watch's thread (agent/pods/node_pods.h listeners); the service answers on the
// store's thread, and the outcome is logged there.

#include <string>
#include <string_view>

#include "agent/pods/node_pods.h"
#include "agent/service/agent_service.h"
#include "lease/lease.h"

namespace hostport::agent::daemon {

class HostNetworkPods {
 public:
  /// Listens to `pods`; call before the watch starts. Both outlive this object's use.
  HostNetworkPods(service::AgentService& service, pods::NodePods& pods);

 private:
  void onChange(const pods::PodChange& change);
  /// After a list: the leases of hostNetwork pods the node no longer has, or that no longer ask.
  void sweep();
  void lease(const pods::NodePod& pod);
  void release(std::vector<AttachmentKey> keys, std::string_view why);

  service::AgentService& service_;
  pods::NodePods& pods_;
};

/// Whether `pod` is a hostNetwork pod that asks for ports and holds them now (not finished, not
/// being deleted).
bool wantsHostPorts(const pods::NodePod& pod);

}  // namespace hostport::agent::daemon
