#pragma once
// The leases being recovered, as the snapshot and the journal's records are replayed onto them.
// Design note:
// - Leases live in one vector and are found by key through an open-addressing index of their
//   positions (IdIndex), so replaying 50,000 records copies no keys and allocates nothing per
//   record beyond the lease's own strings. (Per-record index nodes would also leave holes among
//   those strings once freed, which the agent's long-lived allocations then fill, pinning the
//   freed pages.)
// - A release only marks its slot dead; takeSorted() then sorts the live leases in place by
//   following the cycles of the sorting permutation, so recovery never holds a second vector of
//   50,000 leases.

#include <cstddef>
#include <cstdint>
#include <optional>
#include <vector>

#include "common/id_index.h"
#include "lease/lease.h"

namespace hostport::agent::store {

/// The lease set under replay: adopt the snapshot, apply grants and releases, take it sorted.
class ReplayState {
 public:
  ReplayState() = default;
  ReplayState(const ReplayState&) = delete;
  ReplayState& operator=(const ReplayState&) = delete;

  /// Makes room for `count` leases in all, so replay neither rehashes nor moves leases.
  void reserve(size_t count);

  /// Starts from the snapshot's leases, taken as they are rather than moved one by one into a
  /// second vector. Call on an empty state. A key twice (never written, but the file is input)
  /// keeps the later lease in the earlier one's place, as grant() does.
  void adopt(std::vector<Lease> leases);

  /// Adds or replaces the lease of its key.
  void grant(Lease lease);

  /// False when no lease has this key.
  bool release(const AttachmentKey& key);

  /// The live leases sorted by key, sorted in place: no second vector of 50,000 leases. Leaves
  /// the state spent.
  std::vector<Lease> takeSorted();

 private:
  /// The position of the live lease with `key` (whose hashKey() is `hash`).
  std::optional<uint32_t> find(const AttachmentKey& key, size_t hash) const;

  std::vector<Lease> leases_;
  std::vector<bool> live_;
  IdIndex index_;  // positions in leases_ of the live leases
};

}  // namespace hostport::agent::store
