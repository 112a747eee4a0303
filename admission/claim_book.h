#pragma once
// What one admission replica knows of the cluster pools' claims: a cache of the claim Leases
// (port_claim.h), fed by a list and watch of them, from which candidates are picked by each
// pool's own strategy (the agents' pickers, agent/core/port_picker.h) without asking the API
// server per pod. The cache may lag: the API server's create is the judge (a port taken meanwhile
// is a 409, and the claimer tries the next candidate). Ports this replica is creating are set
// aside as pending, so its own concurrent admissions never race each other for one.
// Thread-safe: the webhook's threads pick and settle while the informer's thread feeds it.

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "admission/port_claim.h"
#include "agent/core/pool_spec.h"
#include "agent/core/port_picker.h"

namespace hostport::admission {

struct ClusterPoolCount {
  std::string pool;
  uint32_t size = 0;
  uint32_t claimed = 0;  // as this replica's cache knows, pending creates included
};

class ClaimBook {
 public:
  /// Keeps the pools of `pools` whose scope is cluster; `random` feeds the random strategy.
  ClaimBook(const std::vector<agent::core::PoolSpec>& pools, std::function<uint64_t()> random);
  ~ClaimBook();

  bool hasPool(std::string_view pool) const;

  /// A list's claims, replacing every claim known (pending creates stay pending).
  void replace(const std::vector<PortClaim>& claims);
  /// A watch's ADDED or MODIFIED claim; a claim of a pool this replica does not know is ignored.
  void add(const PortClaim& claim);
  /// A watch's DELETED claim.
  void remove(const PortClaim& claim);
  /// Whether the first list has come: before it, every port looks free.
  bool synced() const;

  /// The first port of `holder`'s claim for `entry` in `pool`, when every one of its `count`
  /// ports is claimed by it: what a pod re-created under its name gets back.
  std::optional<uint16_t> heldBy(std::string_view holder, std::string_view pool,
                                 std::string_view entry, uint16_t count) const;

  /// The next `count` contiguous ports of `pool` that no claim known holds and no create of this
  /// replica is taking, by the pool's strategy (`scatter`: at random instead), set aside as
  /// pending; nullopt when there are none. A claim that met a conflict scatters: another replica
  /// is taking the ports the strategy names next, so following it would meet it again.
  std::optional<uint16_t> reserve(std::string_view pool, uint16_t count, bool scatter = false);
  /// Ends a reserve(): the ports are no longer pending; `claimed` (created here, or refused with
  /// 409 because another holds them) marks them held until a list or watch says otherwise.
  void settle(std::string_view pool, uint16_t first, uint16_t count, bool claimed);

  std::vector<ClusterPoolCount> counts() const;

 private:
  struct Pool;
  Pool* find(std::string_view pool) const;
  void addLocked(const PortClaim& claim);
  void removeLocked(Pool& pool, uint16_t port);

  mutable std::mutex mutex_;
  std::vector<std::unique_ptr<Pool>> pools_;
  bool synced_ = false;
};

}  // namespace hostport::admission
