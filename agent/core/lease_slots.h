#pragma once
// The leases the allocator holds, packed (packed_lease.h), one small heap block each, in a slot
// table: a lease keeps its slot number while it is held, which is how the port table
// (port_table.h) names its holder, and a freed slot goes to the next lease. The key index is a
// hash set of slot numbers hashed through the packed key bytes (common/id_index.h), so each key
// is kept once. A Lease is unpacked only to answer a call or to report a conflict.

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string_view>
#include <vector>

#include "agent/core/packed_lease.h"
#include "agent/core/slot_chains.h"
#include "agent/core/string_table.h"
#include "common/id_index.h"
#include "lease/lease.h"

namespace hostport::agent::core {

class LeaseSlots {
 public:
  /// Packs `lease` with `pool` in place of lease.pool, interning its text here: insert() it, or
  /// give its references back with discard().
  PackedLease pack(const Lease& lease, std::string_view pool);
  void discard(PackedLease& packed) { packed.release(strings_); }
  /// Holds `packed`, the packed `lease`, whose key no lease here has (find() tells), and returns
  /// its slot.
  uint32_t insert(PackedLease packed, const Lease& lease);
  /// Takes the lease at `slot` out, unpacked, and frees the slot.
  Lease remove(uint32_t slot);

  /// The slot of the lease whose packed key is `keyBytes` (PackedLease::keyBytes()).
  std::optional<uint32_t> find(std::string_view keyBytes) const;
  std::optional<uint32_t> find(const AttachmentKey& key) const;
  Lease leaseAt(uint32_t slot) const { return slots_[slot].unpack(strings_); }
  /// The slots of the leases whose sandbox is the netns `netns` (a known one), and of those of
  /// the pod `uid` (its pod's UID, or the hostNetwork pod a key names): what the pod socket
  /// answers a caller with, a few lookups at any number of leases.
  std::vector<uint32_t> inNetns(const NetnsId& netns) const;
  std::vector<uint32_t> ofPod(std::string_view uid) const;
  /// The slots held, in key order (containerId, then ifname).
  std::vector<uint32_t> keyOrder() const;
  /// Calls `visit` with each slot held, in slot order.
  template <typename Visit>
  void forEachHeld(Visit visit) const {
    (void)forEachHeldFrom(0, slots_.size(), visit);
  }
  /// forEachHeld() for at most `count` slots held from slot `from` on: the slot to go on from,
  /// or nullopt once the last was visited.
  template <typename Visit>
  std::optional<uint32_t> forEachHeldFrom(uint32_t from, std::size_t count, Visit visit) const {
    for (uint32_t slot = from; slot < slots_.size(); ++slot) {
      if (slots_[slot].empty()) continue;
      if (count-- == 0) return slot;
      visit(slot);
    }
    return std::nullopt;
  }

  std::size_t size() const { return index_.size(); }
  /// Makes room for `leases` in all, so holding that many does not grow the tables on the way.
  void reserve(std::size_t leases);
  /// What the packed leases intern, for tests and accounting.
  const StringTable& strings() const { return strings_; }

 private:
  std::vector<PackedLease> slots_;  // empty: free
  std::vector<uint32_t> freeSlots_;
  IdIndex index_;        // slot numbers, by the hash of their packed key
  SlotChains byNetns_;   // ...by their netns identity, when known
  SlotChains byPod_;     // ...by their pod's UID (a hostNetwork lease's: the one its key names)
  StringTable strings_;  // what the packed leases intern
};

}  // namespace hostport::agent::core
