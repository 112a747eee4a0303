#pragma once
// The agent's business: the allocator (pure, in memory) made durable through the lease store.
// Every mutation happens under one mutex and is queued to the store inside it, so the journal
// order is the order of the in-memory changes. A reply goes out only once its record is on disk.
// The service logs what the allocator decided (grants, releases, conflicts with their holder,
// exhaustion) and what the store did (agent/log/event_log.h): the pure core does not log. An event
// is logged after its request is answered and never with the lock held (one built under the lock
// is logged once it is released), so a slow log delays neither the reply nor other requests.

#include <atomic>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <set>
#include <span>
#include <string>
#include <vector>

#include "agent/api/json_codec.h"
#include "agent/core/allocator.h"
#include "agent/log/line_throttle.h"
#include "agent/service/forward_writer.h"
#include "agent/service/metrics.h"
#include "agent/service/netns_id.h"
#include "agent/store/lease_store.h"

namespace hostport::agent::service {

/// The host probe of one request (socket_probe.h): it may narrow what it reads to what the
/// request can ask about.
using ProbeFactory =
    std::function<Result<std::unique_ptr<core::PortProbe>>(const AllocationRequest& request)>;

struct ServiceOptions {
  uint64_t compactAfterJournalBytes = 8 << 20;
  /// The table writer (agent mode). With it, a lease that carries a forwarding record has its
  /// forwards installed once its grant is durable, before the answer, and removed once its
  /// release is; without it (unit tests), leases are only kept.
  ForwardWriter* writer = nullptr;
  /// A GC with an empty valid list is refused while its network holds more leases than this...
  uint64_t emptyGcMaxLeases = 0;
  /// ...unless this is set (--allow-empty-gc): a runtime that lost its state must not wipe the
  /// node, and the reconciler releases the leases of vanished sandboxes without any GC.
  bool allowEmptyGc = false;
};

class AgentService {
 public:
  AgentService(core::Allocator allocator, store::LeaseStore& store, ProbeFactory probes,
               Metrics& metrics, ServiceOptions options = {});

  void allocate(const AllocationRequest& request, std::function<void(Result<Lease>)> done);
  /// Releasing what is not there succeeds with nullopt, after a durable barrier: a release that
  /// raced with ours is on disk before we say "nothing there".
  void release(const AttachmentKey& key, std::function<void(Result<std::optional<Lease>>)> done);
  /// Every interface of one container.
  void releaseContainer(const std::string& containerId,
                        std::function<void(Result<std::vector<Lease>>)> done);
  /// Which request released a lease: alloc.released's `via`.
  enum class ReleaseVia : uint8_t {
    kRequest,        // DELETE of one attachment (CNI DEL)
    kContainer,      // DELETE of a container's attachments
    kGc,             // CNI GC
    kVanished,       // the reconciler: the sandbox's netns is gone
    kReleaseNote,    // a DEL made while the agent was down (the release spool)
    kFailedInstall,  // the grant's forwards could not be installed
    kPodGone,        // a hostNetwork pod's: deleted, off the node, or finished (the pod watch)
  };
  static std::string_view viaName(ReleaseVia via);
  /// Releases each of `keys` that holds a lease; the answer lists what was released.
  void releaseKeys(std::vector<AttachmentKey> keys, ReleaseVia via,
                   std::function<void(Result<std::vector<Lease>>)> done);
  /// CNI GC of one network: releases the leases whose forwarding names `network` and whose key is
  /// not in `valid`. Leases of other networks, or without a forwarding record, are untouched. An
  /// empty `valid` is kInvalidArgument while the network holds more than emptyGcMaxLeases leases,
  /// unless allowEmptyGc. Logs alloc.gc or alloc.gc_refused.
  void collectGarbage(const std::string& network, const std::set<AttachmentKey>& valid,
                      std::function<void(Result<std::vector<Lease>>)> done);

  std::optional<Lease> get(const AttachmentKey& key) const;
  /// Every lease, in no particular order, handed to `visit` a chunk at a time (kLeaseChunk of
  /// them) with the service's lock released in between: read at once, 65,535 leases held it
  /// ~50 ms, which every ADD and DEL meanwhile waited for; a chunk holds it ~1 ms, and no copy of
  /// them all is ever made (~45 MB at 65,535). Not one moment's view: a lease granted or released
  /// between chunks may be seen or missed.
  ///
  /// Returns, read after the last chunk, the attachments whose table write still waits behind
  /// their journal record, sorted: a grant whose forwards are not installed yet, a release whose
  /// lease is gone but whose forwards are still in. Their elements are about to change, so the
  /// reconciler leaves them to that write: judged, a release's forwards would be removed as
  /// strays and a grant's restored as missing, each a false warning and a repair counted, under
  /// any pod churn. A lease granted or released between chunks is among them while the caller
  /// holds the writer's lock (its table write waits for it).
  std::vector<AttachmentKey> forEachLeaseChunk(
      const std::function<void(std::span<const Lease>)>& visit) const;
  static constexpr std::size_t kLeaseChunk = 1024;
  /// The leases of `keys` as they are now, in that order; nullopt for a key that holds none.
  std::vector<std::optional<Lease>> leasesOf(std::span<const AttachmentKey> keys) const;
  /// Leases of a namespace and/or pod name; empty filters match everything.
  std::vector<Lease> list(const std::string& namespaceName, const std::string& podName) const;
  /// The leases whose sandbox is the network namespace `netns` (one per interface of a pod): what
  /// the pod socket answers its caller with. Empty for an unknown NetnsId. Looked up in an index
  /// of the allocator's (core/lease_slots.h), a few microseconds at any number of leases.
  std::vector<Lease> leasesInNetns(const NetnsId& netns) const;
  /// The leases of the pod `uid`: those whose pod it is, and its hostNetwork lease (keyed by the
  /// UID its cgroup carries). Looked up, as leasesInNetns().
  std::vector<Lease> leasesOfPod(std::string_view uid) const;
  /// Who hears of durable lease changes: `granted` with each lease once its grant is durable and
  /// its forwards installed, `released` once its release is durable; after the requester's
  /// answer, on the thread that completed it (the store's). Either may be empty.
  struct LeaseObserver {
    std::function<void(const Lease&)> granted;
    std::function<void(const Lease&)> released;
    /// `granted` runs before the requester's answer, for what must be in place when the runtime
    /// goes on (a pod's CSI volume files, which its containers read once ADD is answered).
    bool grantedBeforeAnswer = false;
  };
  /// Added before the sockets serve (the pod socket's waiters, the cluster publisher): the list
  /// is read without the lock.
  void watchLeases(LeaseObserver observer) { observers_.push_back(std::move(observer)); }
  /// The sandbox of every lease whose netns identity is known: what liveness judges.
  std::vector<SandboxRef> sandboxes() const;
  /// Each pool's usage with its strategy, ranges, rules and usage per namespace, as of one
  /// moment (GET /v1/pools).
  std::vector<api::PoolUsageRow> poolRows() const;
  /// A reload's new rules for `pool` (core::Allocator::setRules): later requests are judged by
  /// them, and no lease is revoked.
  Result<void> setPoolRules(const std::string& pool, core::PoolRules rules);
  std::string metricsText() const;

  /// False once a journal write failed: memory may be ahead of disk, so the agent must restart
  /// and recover from the journal (healthz fails, and the kubelet restarts the pod).
  bool healthy() const { return healthy_.load(); }

 private:
  /// A grant whose forwards failed to install is taken back: no lease holds ports nobody can
  /// reach. The answer is `cause` once the release is durable.
  void undoGrant(const Lease& lease, Error cause, std::function<void(Result<Lease>)> done);
  /// A release whose forwards could not be removed is taken back: the lease is restored and
  /// journaled as granted again, so its ports are not handed to another pod while the old
  /// forward still takes their traffic, and the answer is the removal's error (once the grant is
  /// durable), so the runtime retries the DEL. When a port was taken meanwhile, the lease stays
  /// released and the reconciler removes what its owner tag holds.
  void undoRelease(const Lease& lease, const Error& cause, std::function<void(Result<void>)> done);
  /// Journals the release of `lease`, which the allocator has already let go. If the write
  /// fails, the lease is put back (it is not released on disk); failing that too is logged. If
  /// its forwards cannot be removed, undoRelease().
  void submitRelease(Lease lease, ReleaseVia via, std::function<void(Result<void>)> done);
  void maybeCompact();  // with mutex_ held
  /// The key's table write is queued (with mutex_ held, in the same hold that changed the
  /// allocator): forEachLeaseChunk() lists it as settling until as many settled() as began.
  void beginTableWrite(const AttachmentKey& key);
  void settled(const AttachmentKey& key);  // takes mutex_
  /// Calls settled() when a store callback returns, on every path out of it.
  class SettleOnExit;
  /// Any failed write: the agent turns unhealthy. True for the first failure only, whose cause
  /// the caller logs (agent.unhealthy) without the lock, after answering.
  bool onStoreFailure();

  mutable std::mutex mutex_;
  core::Allocator allocator_;
  store::LeaseStore& store_;
  ProbeFactory probes_;
  Metrics& metrics_;
  ServiceOptions options_;
  bool compactionQueued_ = false;
  log::LineThrottle compactionFailedLog_;       // guarded by mutex_
  std::map<AttachmentKey, uint32_t> settling_;  // guarded by mutex_; a handful at any time
  std::atomic<bool> healthy_{true};
  std::atomic<uint64_t> staticConflicts_{0};
  std::vector<LeaseObserver> observers_;
};

}  // namespace hostport::agent::service
