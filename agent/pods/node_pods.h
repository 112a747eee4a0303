#pragma once
// The pods on this node as the agent's watch last saw them (issue 25), by UID: what the informer
// (kube/informer.h) delivers, kept as NodePod records. The informer's thread writes; any thread
// reads. Listeners hear each change of a record, in order, on the writing thread: a pod that
// comes, changes in what the agent reads, or goes. A write that changes nothing the agent reads
// (a status update, the agent's own annotations) is no change.

#include <chrono>
#include <functional>
#include <map>
#include <mutex>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "agent/pods/node_pod.h"

namespace hostport::agent::pods {

struct PodChange {
  std::optional<NodePod> before;  // none: the pod came
  std::optional<NodePod> after;   // none: the pod went
};

class NodePods {
 public:
  using Listener = std::function<void(const PodChange&)>;

  /// Adds a listener; call before the watch starts.
  void listen(Listener listener);
  /// Adds a listener of lists, heard after each list's changes: the view is then whole, so what it
  /// lacks is not on the node (a pod deleted while nobody watched).
  void listenToLists(std::function<void()> listener);

  /// A list: the pods now. Those not in it went (a change each), the others came or changed.
  void replace(const std::vector<nlohmann::json>& pods);
  /// A pod added or modified.
  void upsert(const nlohmann::json& pod);
  /// A pod deleted (or no longer on this node).
  void remove(const nlohmann::json& pod);

  std::optional<NodePod> byUid(std::string_view uid) const;
  /// The pod whose sandbox and cgroup carry `uid`: its UID, or a static pod's (NodePod::
  /// sandboxUid()).
  std::optional<NodePod> bySandboxUid(std::string_view uid) const;
  bool hasSandboxUid(std::string_view uid) const;
  /// The informer starts a list: what it brings is the node's pods at this moment or later.
  void listing();
  /// When the list the view was built from started (the view is at least that new, the watch
  /// keeping it so); nullopt before the first list.
  std::optional<std::chrono::steady_clock::time_point> listedFrom() const;
  std::vector<NodePod> all() const;
  std::size_t size() const;
  /// Whether a list has come: before it, the agent knows no pod and judges none.
  bool synced() const;
  /// Pod objects that could not be read (no uid, namespace or name), ignored.
  uint64_t unreadable() const;

 private:
  /// upsert() (`present`) or remove() of one pod object.
  void write(const nlohmann::json& pod, bool present);
  /// Stores `after` (none: erases) for `uid` and returns the change, if any; under mutex_.
  std::optional<PodChange> set(const std::string& uid, std::optional<NodePod> after);
  void tell(const std::vector<PodChange>& changes) const;

  mutable std::mutex mutex_;
  std::map<std::string, NodePod, std::less<>> pods_;
  std::map<std::string, std::string, std::less<>>
      byStaticUid_;  // a static pod's UID -> its mirror's
  std::optional<std::chrono::steady_clock::time_point> listing_;
  std::optional<std::chrono::steady_clock::time_point> listedFrom_;
  std::vector<Listener> listeners_;
  std::vector<std::function<void()>> listListeners_;
  bool synced_ = false;
  uint64_t unreadable_ = 0;
};

}  // namespace hostport::agent::pods
