#pragma once
// The allocation engine. A picking strategy (port_picker.h) proposes candidate ports; the engine
// decides, checking each against the leases it holds and against the host through PortProbe,
// with a bounded number of probe rejections (the Kea shape). Pure: no I/O, no locks; the caller
// serialises calls and makes results durable.

#include <chrono>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "agent/core/allocation_error.h"
#include "agent/core/pool_rules.h"
#include "agent/core/pool_spec.h"
#include "agent/core/sticky_memory.h"
#include "lease/lease.h"
#include "lease/sticky_entry.h"

namespace hostport::agent::core {

/// The engine's time, for quarantine: steady_clock::now in production, a fake in tests.
using Clock = std::function<std::chrono::steady_clock::time_point()>;

/// Asks the host whether a port is bound (sock_diag in production, a fake in tests).
class PortProbe {
 public:
  virtual ~PortProbe() = default;
  /// True when something on the host is bound to (protocol, port) on any address.
  virtual bool isBound(Protocol protocol, uint16_t port) = 0;
  /// Who holds a bound port, for an error message only: finding the process can be slow
  /// (a /proc scan), so it is asked only once a static claim has failed.
  virtual PortHolder holderOf(Protocol protocol, uint16_t port) = 0;
};

/// Ports of a pool that one namespace's leases hold.
struct NamespaceUsage {
  std::string name;
  uint32_t used = 0;
  friend bool operator==(const NamespaceUsage&, const NamespaceUsage&) = default;
};

/// The ports one request takes from one pool, as the pool's rules count them (rule_counts.h).
struct PoolDemand {
  std::string pool;
  uint32_t ports = 0;
  friend bool operator==(const PoolDemand&, const PoolDemand&) = default;
};

struct PoolUsage {
  std::string name;
  uint32_t size = 0;         // ports in the pool
  uint32_t used = 0;         // ports held by a lease
  uint32_t quarantined = 0;  // free ports still within their reuse delay (not counted in used)
  /// Ports held per namespace, as the pool's quotas count them (pool_rules.h), by name; a lease
  /// without a namespace counts under "".
  std::vector<NamespaceUsage> namespaces;
};

class Allocator {
 public:
  /// kInvalidArgument for pools that validatePoolSpecs() refuses (pool_spec.h): an empty or
  /// overlapping range, a duplicate pool name, a reuse delay above kMaxReuseDelaySeconds...
  /// `random` feeds the random strategy and `clock` the quarantine of released ports (empty:
  /// steady_clock); inject both in tests.
  static Result<Allocator> create(std::vector<PoolSpec> pools, std::function<uint64_t()> random,
                                  Clock clock = {},
                                  std::size_t stickyCapacity = StickyMemory::kDefaultCapacity);

  Allocator(Allocator&&) noexcept;
  Allocator& operator=(Allocator&&) noexcept;
  ~Allocator();

  /// Grants every static claim and dynamic request, or nothing. The same key again returns the
  /// lease it already holds, whatever the request says (ADD is idempotent). Errors:
  ///  - kInvalidArgument: unknown pool (named), protocol not allowed in the pool, a request
  ///    wider than the pool, too many rows;
  ///  - kConflict: a static claim held by another lease (named) or bound on the host (port,
  ///    protocol, pid and command where known), with that holder as its Conflict;
  ///  - kExhausted: no free port in the pool (named, with its size);
  ///  - kNotAllowed, kQuotaExceeded: the pool's rules refuse it, with the Refusal; judged before
  ///    any port is picked or probed.
  /// A request with sticky set is offered the ports its pod (namespace/name) had last time in
  /// this pool; one without is not, and its grant makes the memory forget the pod.
  std::expected<Lease, AllocationError> allocate(const AllocationRequest& request,
                                                 PortProbe& probe);

  /// Judges `request` alone, as allocate() does before it picks or probes anything, but as if no
  /// lease were held (every quota's usage zero) and without a key: what the admission server can
  /// know before the pod reaches a node. The errors are allocate()'s, word for word. Returns what
  /// the request takes from each pool it touches (its own pool first, even at zero ports).
  std::expected<std::vector<PoolDemand>, AllocationError> judge(
      const AllocationRequest& request) const;

  /// Releases the lease of `key` and returns it; nullopt when there is none. Its dynamic ports
  /// go into their pool's quarantine: picked again only after the pool's reuseDelaySeconds, or
  /// sooner when nothing else is free (oldest release first), or by the same pod (sticky).
  std::optional<Lease> release(const AttachmentKey& key);

  /// Puts back a lease read from storage, unchecked against the host and the pool's rules (a
  /// lease is never revoked). kConflict if it overlaps a lease already held (storage corruption),
  /// kInvalidArgument for an unknown pool. Restoring quarantines nothing: quarantine lives in
  /// memory and a restart forgets it. The sticky memory records it as a grant.
  Result<void> restore(const Lease& lease);
  /// Replays sticky memory read from storage, oldest first (after the leases are restored), so a
  /// pod that comes back after a restart is offered its previous ports.
  void recallSticky(const std::vector<StickyEntry>& entries);
  /// The sticky memory, oldest first: what a snapshot keeps.
  std::vector<StickyEntry> stickyEntries() const;
  std::size_t stickyPods() const;  // pods remembered
  /// Replaces the rules of pool `pool` (a config reload). Leases are never revoked: a pool whose
  /// rules now exclude some holder keeps its leases and refuses new requests. kNotFound for an
  /// unknown pool.
  Result<void> setRules(std::string_view pool, PoolRules rules);
  /// Makes room for `leases` in all, so restoring that many does not grow the tables on the way.
  void reserve(std::size_t leases);

  /// Leases are held packed (packed_lease.h): these return unpacked copies.
  std::optional<Lease> find(const AttachmentKey& key) const;
  /// Calls `visit` with each lease in key order, one unpacked at a time, so a caller that keeps
  /// a few never has them all unpacked at once. `visit` must not call into the allocator.
  void forEachLease(const std::function<void(const Lease&)>& visit) const;
  /// forEachLease() in the order the leases are held, without sorting their keys: for a pass over
  /// all of them that shows no order (the reconciler's, liveness), where the sort cost ~40 ms at
  /// 65,535 leases under the service's lock.
  void forEachLeaseHeld(const std::function<void(const Lease&)>& visit) const;
  /// forEachLeaseHeld() for at most `count` leases, from where the last call said to go on (0 at
  /// first): where to go on from, or nullopt after the last lease. Leases granted or released
  /// between calls may be missed or seen.
  std::optional<uint32_t> forEachLeaseHeldFrom(
      uint32_t from, std::size_t count, const std::function<void(const Lease&)>& visit) const;
  std::vector<Lease> leases() const;  // in key order
  /// The leases whose sandbox is the netns `netns`, and those of the pod `uid` (the hostNetwork pod
  /// their key names, else their pod's UID), in key order: looked up, not scanned.
  std::vector<Lease> leasesInNetns(const NetnsId& netns) const;
  std::vector<Lease> leasesOfPod(std::string_view uid) const;
  std::size_t leaseCount() const;
  /// Also lets go of the quarantined ports whose delay is over, which changes no lease.
  std::vector<PoolUsage> usage() const;
  const std::vector<PoolSpec>& pools() const;
  /// Ports found busy on the host so far (skipped dynamic candidates and refused static claims).
  uint64_t hostConflicts() const;

 private:
  struct State;
  explicit Allocator(std::unique_ptr<State> state);
  std::vector<Lease> leasesOf(const std::vector<uint32_t>& slots) const;

  std::unique_ptr<State> state_;
};

}  // namespace hostport::agent::core
