#pragma once
// The agent's side of the Kubernetes API: the ports on each pod and the pools' capacity on the
// Node (issue 13), and the watch of this node's pods (issue 25), from threads of their own, so the
// API server is never on the ADD path.
//
// Teardown is the members' order: the pod watch stops first, then the capacity thread (and with
// it the publisher, whose wait it sleeps in), then the publisher's thread, then the client that
// thread sends with.

#include <memory>
#include <thread>

#include "agent/config/agent_config.h"
#include "agent/daemon/deleted_pod_leases.h"
#include "agent/daemon/host_network_pods.h"
#include "agent/daemon/pod_watch.h"
#include "agent/daemon/pool_requests.h"
#include "agent/publish/publisher.h"
#include "agent/service/agent_service.h"
#include "agent/service/metrics.h"
#include "common/error.h"
#include "kube/kube_client.h"

namespace hostport::agent::daemon {

class Publication {
 public:
  /// Publication to the cluster `config` names (--kubeconfig, else the in-cluster config) as node
  /// config.nodeName (else env NODE_NAME): the publisher recovers what it owes from `service`'s
  /// leases, observes every grant and release from now on, and adds its figures to `metrics`.
  /// Nothing, with one kube.publication_off line saying why, when the agent knows no cluster.
  /// Call before any thread can grant or release.
  static Result<std::unique_ptr<Publication>> start(const config::AgentConfig& config,
                                                    service::AgentService& service,
                                                    service::Metrics& metrics);

  Publication(const Publication&) = delete;
  Publication& operator=(const Publication&) = delete;
  ~Publication() = default;

  /// Stops the threads that ask the service for leases (the pod watch's, the deleted pods'),
  /// keeping every object: the journal's last acknowledgements still reach the listeners.
  void stopWatching() {
    if (podWatch_) podWatch_->stop();
    if (deletedPods_) deletedPods_->stop();
  }

  /// HostNetworkPods::awaitLease(), or nothing with watchPods off (or no cluster).
  void awaitHostNetworkLease(const std::string& sandboxUid, std::chrono::milliseconds bound) {
    if (hostNetwork_) hostNetwork_->awaitLease(sandboxUid, bound);
  }

  /// This node's pods as the watch sees them; null with watchPods off.
  pods::NodePods* nodePods() { return podWatch_ ? &podWatch_->pods() : nullptr; }

 private:
  Publication() = default;

  std::unique_ptr<kube::KubeClient> client_;
  std::unique_ptr<publish::Publisher> publisher_;
  std::jthread capacity_;
  // Declared before the watch, whose thread calls them: destroyed after that thread is joined.
  std::unique_ptr<HostNetworkPods> hostNetwork_;
  std::unique_ptr<PoolRequestCheck> poolRequests_;
  std::unique_ptr<DeletedPodLeases> deletedPods_;
  std::unique_ptr<PodWatch> podWatch_;
};

}  // namespace hostport::agent::daemon
