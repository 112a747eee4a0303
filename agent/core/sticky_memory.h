#pragma once
// Sticky ports: a pod that comes back under the same namespace/name (a StatefulSet ordinal, a
// restarted sandbox) is offered the host ports it had last time. Only the most recent pods are
// remembered (least recently granted are forgotten first), so memory stays bounded however
// many pods churn through the node.
//
// Every restored lease passes through here at start-up, so an entry is one packed string (about
// 64 bytes of heap) in a slot table with an intrusive recency list and an open-addressing index:
// no list or map nodes to allocate per pod, and a forgotten pod's slot, string buffer included,
// is reused by the next one.
//
// Durable through the store: every grant is journaled, and replaying the grants in journal order
// rebuilds the memory; a snapshot keeps entries() (oldest first), since compaction drops the
// grants of released leases (lease/sticky_entry.h, agent/store/snapshot.h).

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "common/id_index.h"
#include "lease/lease.h"
#include "lease/sticky_entry.h"

namespace hostport::agent::core {

class StickyMemory {
 public:
  static constexpr std::size_t kDefaultCapacity = 4096;  // pods

  explicit StickyMemory(std::size_t capacity = kDefaultCapacity) : capacity_(capacity) {}

  /// Records the dynamic grants of `pod` in `pool`, replacing what was known of it. A pod
  /// without a namespace/name or without dynamic grants is not recorded.
  void remember(const PodIdentity& pod, std::string_view pool, const std::vector<PortGrant>& ports);
  /// The host port `pod` last got in `pool` for a request of the same name, protocol and count.
  std::optional<uint16_t> previous(const PodIdentity& pod, std::string_view pool,
                                   const DynamicPortRequest& request) const;
  /// Forgets what was remembered of `pod` (it opted out of sticky ports).
  void forget(const PodIdentity& pod);
  /// What a grant of `lease` does: remember its dynamic rows, or forget the pod when it opted out.
  void record(const Lease& lease);
  /// Replays one journaled or snapshotted entry (forget set: forget the pod).
  void apply(const StickyEntry& entry);
  /// Everything remembered, oldest first: applying them in this order to an empty memory of the
  /// same capacity gives this memory back.
  std::vector<StickyEntry> entries() const;
  std::size_t size() const { return index_.size(); }
  std::size_t capacity() const { return capacity_; }

 private:
  static constexpr uint32_t kNone = UINT32_MAX;
  struct Entry {
    // Packed (packed_text.h), in order: bytes "namespace/name", bytes pool, varint row count,
    // then per dynamic row: bytes name, u8 protocol, u16 count, u16 hostPort.
    std::string packed;
    uint32_t newer = kNone;  // the recency list
    uint32_t older = kNone;
  };

  static std::string podKey(std::string_view namespaceName, std::string_view name) {
    return std::string(namespaceName) + "/" + std::string(name);
  }
  static std::string_view keyOf(const Entry& entry);
  void remember(std::string_view namespaceName, std::string_view name, std::string_view pool,
                const std::vector<PortGrant>& ports);
  void forget(std::string_view key);
  std::optional<uint32_t> find(std::string_view key, uint64_t hash) const;
  void unlink(uint32_t at);
  void makeNewest(uint32_t at);

  std::size_t capacity_;
  std::vector<Entry> entries_;       // slots; every slot holds a pod once filled, unless freed
  std::vector<uint32_t> freeSlots_;  // slots of forgotten pods, reused first
  IdIndex index_;                    // slots by the hash of their pod key
  uint32_t newest_ = kNone;
  uint32_t oldest_ = kNone;
};

}  // namespace hostport::agent::core
