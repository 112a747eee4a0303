#include "agent/core/sticky_memory.h"

namespace hostport::agent {

void StickyMemory::remember(const PodIdentity& pod, std::string_view pool,
                            const std::vector<PortGrant>& ports) {
  if (pod.namespaceName.empty() || pod.name.empty() || capacity_ == 0) return;
  std::vector<Row> rows;
  for (const auto& grant : ports) {
    if (!grant.isStatic) rows.push_back({grant.name, grant.protocol, grant.count, grant.hostPort});
  }
  if (rows.empty()) return;

  std::string key = podKey(pod);
  if (const auto found = byPod_.find(key); found != byPod_.end()) {
    found->second->pool = pool;
    found->second->rows = std::move(rows);
    entries_.splice(entries_.begin(), entries_, found->second);
    return;
  }
  if (entries_.size() >= capacity_) {
    byPod_.erase(entries_.back().pod);
    entries_.pop_back();
  }
  entries_.push_front(Entry{key, std::string(pool), std::move(rows)});
  byPod_.emplace(std::move(key), entries_.begin());
}

std::optional<uint16_t> StickyMemory::previous(const PodIdentity& pod, std::string_view pool,
                                               const DynamicPortRequest& request) const {
  if (pod.namespaceName.empty() || pod.name.empty()) return std::nullopt;
  const auto found = byPod_.find(podKey(pod));
  if (found == byPod_.end() || found->second->pool != pool) return std::nullopt;
  for (const auto& row : found->second->rows) {
    if (row.name == request.name && row.protocol == request.protocol &&
        row.count == request.count) {
      return row.hostPort;
    }
  }
  return std::nullopt;
}

}  // namespace hostport::agent
