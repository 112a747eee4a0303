#pragma once
// Slots grouped by a key that many may share (the netns of a pod's interfaces, the UID of a pod):
// one IdIndex entry per key, for the first slot that has it, and the others linked to it through
// per-slot next/prev arrays. Adding or removing a slot touches its neighbours only, however many
// share its key. (An IdIndex with one entry per slot, as the first cut had, probes through every
// entry of a shared key at each insert: 65,535 leases of one netns took 1.8 s to recover.)
//
// Keys are known by their 64-bit hash, kept per slot; two keys that hash the same share a chain,
// so a lookup checks each slot's real key. Pure: no I/O.

#include <cstdint>
#include <vector>

#include "common/id_index.h"

namespace hostport::agent::core {

class SlotChains {
 public:
  void add(uint32_t slot, uint64_t hash) {
    grow(slot);
    hash_[slot] = hash;
    const auto head = heads_.find(hash, [&](uint32_t at) { return hash_[at] == hash; });
    if (!head) {
      heads_.insert(slot, hash);
      next_[slot] = prev_[slot] = kNone;
      return;
    }
    next_[slot] = next_[*head];
    prev_[slot] = *head;
    if (next_[*head] != kNone) prev_[next_[*head]] = slot;
    next_[*head] = slot;
  }

  void remove(uint32_t slot) {
    const uint64_t hash = hash_[slot];
    if (prev_[slot] != kNone) {
      next_[prev_[slot]] = next_[slot];
      if (next_[slot] != kNone) prev_[next_[slot]] = prev_[slot];
    } else {
      heads_.erase(hash, [&](uint32_t at) { return at == slot; });
      if (next_[slot] != kNone) {
        prev_[next_[slot]] = kNone;
        heads_.insert(next_[slot], hash);
      }
    }
    next_[slot] = prev_[slot] = kNone;
  }

  /// Calls `visit` with every slot added under `hash` (and any other key hashing the same).
  template <typename Visit>
  void forEach(uint64_t hash, Visit visit) const {
    const auto head = heads_.find(hash, [&](uint32_t at) { return hash_[at] == hash; });
    for (uint32_t slot = head ? *head : kNone; slot != kNone; slot = next_[slot]) visit(slot);
  }

 private:
  static constexpr uint32_t kNone = UINT32_MAX;

  void grow(uint32_t slot) {
    if (slot < next_.size()) return;
    const std::size_t size = std::max<std::size_t>(slot + 1, next_.size() * 2);
    next_.resize(size, kNone);
    prev_.resize(size, kNone);
    hash_.resize(size, 0);
  }

  IdIndex heads_;
  std::vector<uint32_t> next_;
  std::vector<uint32_t> prev_;
  std::vector<uint64_t> hash_;
};

}  // namespace hostport::agent::core
