#include "agent/store/replay_state.h"

#include <algorithm>
#include <string_view>
#include <utility>

namespace hostport::agent::store {
namespace {

/// The first 8 bytes of `text` as a big-endian number, zero-padded: when two prefixes differ,
/// the texts compare the same way.
uint64_t sortPrefix(std::string_view text) {
  uint64_t prefix = 0;
  for (size_t i = 0; i < 8; ++i) {
    prefix = (prefix << 8) | (i < text.size() ? static_cast<unsigned char>(text[i]) : 0u);
  }
  return prefix;
}

size_t hashKey(const AttachmentKey& key) {
  const size_t a = hashOfBytes(key.containerId);
  const size_t b = hashOfBytes(key.ifname);
  return a ^ (b + 0x9e3779b97f4a7c15ull + (a << 6) + (a >> 2));
}

}  // namespace

void ReplayState::reserve(size_t count) {
  leases_.reserve(count);
  live_.reserve(count);
  index_.reserve(count);
}

void ReplayState::adopt(std::vector<Lease> leases) {
  leases_ = std::move(leases);
  live_.assign(leases_.size(), true);
  index_.reserve(leases_.size());
  for (uint32_t i = 0; i < leases_.size(); ++i) {
    const size_t hash = hashKey(leases_[i].key);
    if (const auto at = find(leases_[i].key, hash)) {
      leases_[*at] = std::move(leases_[i]);
      leases_[i] = Lease{};
      live_[i] = false;
      continue;
    }
    index_.insert(i, hash);
  }
}

void ReplayState::grant(Lease lease) {
  const size_t hash = hashKey(lease.key);
  if (const auto at = find(lease.key, hash)) {
    leases_[*at] = std::move(lease);
    return;
  }
  leases_.push_back(std::move(lease));
  live_.push_back(true);
  index_.insert(static_cast<uint32_t>(leases_.size() - 1), hash);
}

bool ReplayState::release(const AttachmentKey& key) {
  const size_t hash = hashKey(key);
  const auto at = find(key, hash);
  if (!at) return false;
  index_.erase(hash, [&](uint32_t other) { return other == *at; });
  live_[*at] = false;
  leases_[*at] = Lease{};  // free its memory now
  return true;
}

std::vector<Lease> ReplayState::takeSorted() {
  // Positions sorted by the first 8 bytes of the container ID, then by the whole key: random
  // IDs differ early, so a comparison seldom leaves this array for the leases' strings.
  struct Position {
    uint64_t prefix;
    uint32_t at;
  };
  std::vector<Position> order;
  order.reserve(index_.size());
  for (uint32_t i = 0; i < leases_.size(); ++i) {
    if (live_[i]) order.push_back({sortPrefix(leases_[i].key.containerId), i});
  }
  std::sort(order.begin(), order.end(), [&](const Position& a, const Position& b) {
    if (a.prefix != b.prefix) return a.prefix < b.prefix;
    return leases_[a.at].key < leases_[b.at].key;
  });
  // from[k]: where the lease that belongs at k is now; the released ones go last.
  std::vector<uint32_t> from;
  from.reserve(leases_.size());
  for (const Position& position : order) from.push_back(position.at);
  for (uint32_t i = 0; i < leases_.size(); ++i) {
    if (!live_[i]) from.push_back(i);
  }
  // Follow each cycle of the permutation once, moving every lease once; a visited position
  // is marked by from[k] == k.
  for (uint32_t start = 0; start < from.size(); ++start) {
    if (from[start] == start) continue;
    Lease first = std::move(leases_[start]);
    uint32_t k = start;
    while (from[k] != start) {
      leases_[k] = std::move(leases_[from[k]]);
      const uint32_t next = from[k];
      from[k] = k;
      k = next;
    }
    leases_[k] = std::move(first);
    from[k] = k;
  }
  leases_.resize(order.size());
  return std::move(leases_);
}

std::optional<uint32_t> ReplayState::find(const AttachmentKey& key, size_t hash) const {
  return index_.find(hash, [&](uint32_t at) { return leases_[at].key == key; });
}

}  // namespace hostport::agent::store
