#pragma once
// This node's pods, watched (issue 25): an informer (kube/informer.h) of the pods whose
// spec.nodeName is this node, with an API client of its own (a watch holds its connection), on a
// thread of its own, filling the cache of NodePod records (agent/pods/node_pods.h). Its notes are
// logged as kube.watch_* events, its figures added to /metrics. Nothing on the ADD path waits for
// it: a CNI request works with the API server down, as before.

#include <condition_variable>
#include <memory>
#include <mutex>
#include <string>
#include <thread>

#include "agent/config/agent_config.h"
#include "agent/pods/node_pods.h"
#include "agent/service/metrics.h"
#include "kube/cluster_config.h"
#include "kube/informer.h"
#include "kube/kube_client.h"

namespace hostport::agent::daemon {

class PodWatch {
 public:
  /// A watch of the pods of `node` in `cluster`, within config's API limits; it starts with
  /// start(), once the cache's listeners are in.
  static Result<std::unique_ptr<PodWatch>> create(const kube::ClusterConfig& cluster,
                                                  const std::string& node,
                                                  const config::AgentConfig& config,
                                                  service::Metrics& metrics);
  void start();
  PodWatch(const PodWatch&) = delete;
  PodWatch& operator=(const PodWatch&) = delete;
  /// Stops the watch (a stream in progress is cancelled) and joins its thread.
  /// Stops the watch and joins its thread; the view stays readable. Idempotent.
  void stop();
  ~PodWatch();

  pods::NodePods& pods() { return pods_; }

 private:
  PodWatch() = default;
  /// The client's wait (rate limit, backoff), cut short by the destructor.
  bool waitUntil(std::chrono::steady_clock::time_point until);

  std::string node_;
  pods::NodePods pods_;
  std::mutex mutex_;
  std::condition_variable wake_;
  bool stopping_ = false;
  std::unique_ptr<kube::KubeClient> client_;
  std::unique_ptr<kube::Informer> informer_;
  std::jthread thread_;
};

}  // namespace hostport::agent::daemon
