#include "agent/pods/node_pods.h"

namespace hostport::agent::pods {

void NodePods::listen(Listener listener) {
  std::lock_guard lock(mutex_);
  listeners_.push_back(std::move(listener));
}

std::optional<PodChange> NodePods::set(const std::string& uid, std::optional<NodePod> after) {
  const auto found = pods_.find(uid);
  std::optional<NodePod> before;
  if (found != pods_.end()) before = found->second;
  if (before == after) return std::nullopt;
  if (before && !before->staticUid.empty()) byStaticUid_.erase(before->staticUid);
  if (after) {
    if (!after->staticUid.empty()) byStaticUid_.insert_or_assign(after->staticUid, uid);
    pods_.insert_or_assign(uid, *after);
  } else {
    pods_.erase(found);
  }
  return PodChange{std::move(before), std::move(after)};
}

void NodePods::listenToLists(std::function<void()> listener) {
  std::lock_guard lock(mutex_);
  listListeners_.push_back(std::move(listener));
}

void NodePods::replace(const std::vector<nlohmann::json>& pods) {
  std::vector<PodChange> changes;
  {
    std::lock_guard lock(mutex_);
    std::map<std::string, NodePod, std::less<>> now;
    for (const nlohmann::json& pod : pods) {
      auto record = readNodePod(pod);
      if (!record) {
        ++unreadable_;
        continue;
      }
      now.emplace(record->uid, std::move(*record));
    }
    std::vector<std::string> gone;
    for (const auto& [uid, pod] : pods_) {
      if (!now.contains(uid)) gone.push_back(uid);
    }
    for (const std::string& uid : gone) {
      if (auto change = set(uid, std::nullopt)) changes.push_back(std::move(*change));
    }
    for (auto& [uid, pod] : now) {
      if (auto change = set(uid, std::move(pod))) changes.push_back(std::move(*change));
    }
    synced_ = true;
    listedFrom_ = listing_;
  }
  tell(changes);
  for (const auto& listener : listListeners_) listener();
}

void NodePods::upsert(const nlohmann::json& pod) { write(pod, true); }

void NodePods::remove(const nlohmann::json& pod) { write(pod, false); }

void NodePods::write(const nlohmann::json& pod, bool present) {
  auto record = readNodePod(pod);
  std::optional<PodChange> change;
  {
    std::lock_guard lock(mutex_);
    if (!record) {
      ++unreadable_;
      return;
    }
    const std::string uid = record->uid;
    change = set(uid, present ? std::optional<NodePod>(std::move(*record)) : std::nullopt);
  }
  if (change) tell({std::move(*change)});
}

void NodePods::tell(const std::vector<PodChange>& changes) const {
  // Listeners are added before the watch starts, so reading them unlocked here is safe; they run
  // outside the lock, so they may read this cache.
  for (const PodChange& change : changes) {
    for (const Listener& listener : listeners_) listener(change);
  }
}

std::optional<NodePod> NodePods::byUid(std::string_view uid) const {
  std::lock_guard lock(mutex_);
  const auto found = pods_.find(uid);
  if (found == pods_.end()) return std::nullopt;
  return found->second;
}

std::optional<NodePod> NodePods::bySandboxUid(std::string_view uid) const {
  std::lock_guard lock(mutex_);
  auto found = pods_.find(uid);
  if (found != pods_.end() && found->second.staticUid.empty()) return found->second;
  const auto mirror = byStaticUid_.find(uid);
  if (mirror == byStaticUid_.end()) return std::nullopt;
  found = pods_.find(mirror->second);
  if (found == pods_.end()) return std::nullopt;
  return found->second;
}

bool NodePods::hasSandboxUid(std::string_view uid) const { return bySandboxUid(uid).has_value(); }

void NodePods::listing() {
  std::lock_guard lock(mutex_);
  listing_ = std::chrono::steady_clock::now();
}

std::optional<std::chrono::steady_clock::time_point> NodePods::listedFrom() const {
  std::lock_guard lock(mutex_);
  return listedFrom_;
}

std::vector<NodePod> NodePods::all() const {
  std::lock_guard lock(mutex_);
  std::vector<NodePod> out;
  out.reserve(pods_.size());
  for (const auto& [uid, pod] : pods_) out.push_back(pod);
  return out;
}

std::size_t NodePods::size() const {
  std::lock_guard lock(mutex_);
  return pods_.size();
}

bool NodePods::synced() const {
  std::lock_guard lock(mutex_);
  return synced_;
}

uint64_t NodePods::unreadable() const {
  std::lock_guard lock(mutex_);
  return unreadable_;
}

}  // namespace hostport::agent::pods
