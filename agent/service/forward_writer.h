#pragma once
// The agent is the one writer of table ip/ip6 hostport in agent mode: a lease's forwards go in
// when its grant is durable and come out when its release is, and the reconciler lays out again
// what someone removed. Every write goes through this class, one at a time, so the service's
// store callbacks and the reconciler never interleave half-done changes.
//
// A lease without a forwarding record forwards nothing: install() writes nothing for it, and
// remove() removes nothing. Nothing of ours is under its tag; what someone else put there is a
// stray to the reconciler, which removes it, lease or not, so it cannot take the traffic of the
// ports' next owner.

#include <atomic>
#include <functional>
#include <memory>
#include <mutex>
#include <span>
#include <vector>

#include "common/error.h"
#include "forwards/plan_writer.h"
#include "hostnet/host_network.h"
#include "lease/lease.h"
#include "nft/ruleset.h"

namespace hostport::agent::service {

class ForwardWriter {
 public:
  /// The writer over `ruleset` and `network`, which it owns; both are used from one thread at a
  /// time (its lock).
  ForwardWriter(std::unique_ptr<nft::Ruleset> ruleset,
                std::unique_ptr<hostnet::HostNetwork> network);

  /// Installs a new grant's elements (all or nothing), then sets route_localnet for its pod when
  /// 127.0.0.1 is forwarded and flushes stale UDP conntrack entries of its host ports. A failed
  /// route_localnet removes the elements again; a failed flush is only a warning (a stale flow
  /// delays traffic, it does not misroute it for long). kConflict when another owner holds a key;
  /// kInvalidArgument, with nothing written, when none of its ports can be forwarded
  /// (nft::requireForwards) or its pod address is the node's own (forwards::refuseNodeTargets).
  Result<void> install(const Lease& lease);

  /// Removes exactly the lease's elements, by key (nft::Ruleset::removeExact), and flushes UDP
  /// conntrack of its host ports. Nothing there is success.
  Result<void> remove(const Lease& lease);

  /// For the reconciler: every write stays out while it holds this, so what it read stays true
  /// until it has written.
  std::unique_lock<std::mutex> lock() { return std::unique_lock(mutex_); }
  /// install() with the lock already held (by lock()), without a new grant's checks, and the
  /// table under it: the reconciler reads and repairs through these.
  Result<void> installLocked(const Lease& lease);
  /// installLocked() for many leases, none with conditions, a transaction per kRestoreBatch of
  /// them (forwards::writePlans): a repair after a flush restores 65,535 leases in a few dozen
  /// commits instead of one each. Each lease's result, in order.
  std::vector<Result<void>> restoreLocked(std::span<const Lease* const> leases);
  /// Leases per transaction of restoreLocked(): about 2 elements each, ~100 bytes an element.
  static constexpr std::size_t kRestoreBatch = 2048;
  nft::Ruleset& ruleset() { return *ruleset_; }
  /// True once since a write failed: the kernel may differ from the leases while the ruleset's
  /// generation stayed put (a failed transaction does not move it), so the reconciler compares.
  bool takeFailedWrite() { return failedWrite_.exchange(false); }
  /// Who hears that forwards were left behind without a lease (a release whose removal failed
  /// and whose lease could not be kept): the reconciler's trigger(), so they go within
  /// milliseconds, not at the next period. An empty function unsets it (before its target goes).
  void onLeftBehind(std::function<void()> hook);
  /// Says so to that hook, if any.
  void leftBehind();

 private:
  Result<void> removeLocked(const Lease& lease);
  Result<void> writeLocked(const AttachmentKey& key, const nft::AttachmentPlan& plan);
  forwards::HostNetworkAccess network();

  std::mutex mutex_;
  std::unique_ptr<nft::Ruleset> ruleset_;
  std::unique_ptr<hostnet::HostNetwork> network_;
  std::atomic<bool> failedWrite_{false};
  std::mutex hookMutex_;  // its own: saying so never waits for a compare under mutex_
  std::function<void()> leftBehind_;
};

}  // namespace hostport::agent::service
