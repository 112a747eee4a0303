#include "agent/service/agent_service.h"

#include <chrono>

#include "agent/api/http_errors.h"
#include "agent/log/event_log.h"
#include "agent/service/netns_id.h"
#include "agent/service/service_log.h"

namespace hostport::agent::service {
namespace {

using log::Component;
using log::Level;

std::unexpected<Error> journalFailedEarlier() {
  return fail(ErrorCode::kUnavailable, "the lease journal failed; the agent must restart");
}

}  // namespace

AgentService::AgentService(core::Allocator allocator, store::LeaseStore& store, ProbeFactory probes,
                           Metrics& metrics, ServiceOptions options)
    : allocator_(std::move(allocator)),
      store_(store),
      probes_(std::move(probes)),
      metrics_(metrics),
      options_(options) {}

bool AgentService::onStoreFailure() {
  metrics_.countError("journal_write");
  return healthy_.exchange(false);
}

class AgentService::SettleOnExit {
 public:
  SettleOnExit(AgentService& service, const AttachmentKey& key) : service_(service), key_(key) {}
  SettleOnExit(const SettleOnExit&) = delete;
  SettleOnExit& operator=(const SettleOnExit&) = delete;
  ~SettleOnExit() { now(); }
  /// Before the answer, where the table already holds what the allocator says: a caller that
  /// goes on at the answer finds nothing settling.
  void now() {
    if (std::exchange(pending_, false)) service_.settled(key_);
  }

 private:
  AgentService& service_;
  const AttachmentKey& key_;
  bool pending_ = true;
};

void AgentService::allocate(const AllocationRequest& request,
                            std::function<void(Result<Lease>)> done) {
  const auto started = std::chrono::steady_clock::now();
  if (!healthy()) {
    done(journalFailedEarlier());
    return;
  }
  auto netnsId = netnsIdOf(request.netns);
  if (!netnsId) {
    const Error error = netnsId.error();
    done(std::unexpected(error));
    log::event(Component::kAlloc, Level::kInfo, "alloc.refused",
               {keyField(request.key),
                podField(request.pod),
                {"code", api::machineCode(error.code)},
                {"cause", error.message}});
    return;
  }
  // The host's sockets are read before the lock: the snapshot is per request, narrowed to what
  // the request can ask about (socket_probe.h).
  auto probe = probes_(request);
  if (!probe) {
    const Error error = probe.error();
    done(std::unexpected(error));
    log::event(Component::kSocket, Level::kWarn, "socket.snapshot_failed",
               {keyField(request.key), podField(request.pod), {"cause", error.message}});
    return;
  }
  BusyRecordingProbe recording(**probe, request.key);
  AllocationRequest identified = request;
  identified.netnsId = *netnsId;
  std::unique_lock lock(mutex_);
  auto lease = allocator_.allocate(identified, recording);
  if (!lease) {
    if (lease.error().code == ErrorCode::kConflict) ++staticConflicts_;
    if (lease.error().refusal) {
      metrics_.countRefusal(std::string(request.poolName()), *lease.error().refusal);
    }
    const PendingEvent refusal = refusalEvent(allocator_, request, lease.error());
    lock.unlock();
    done(std::unexpected(std::move(lease.error())));
    recording.logBusy();
    refusal.emit();
    return;
  }
  // Also for a repeated ADD: the first one's record may not be durable yet, and this reply
  // must not overtake it. Replaying the same grant twice is harmless.
  beginTableWrite(lease->key);
  store_.submit(
      {store::JournalRecord::Kind::kGrant, *lease},
      [this, lease = *lease, started, done = std::move(done)](Result<void> written) mutable {
        SettleOnExit settle(*this, lease.key);
        if (!written) {
          const bool first = onStoreFailure();
          {
            std::lock_guard relock(mutex_);
            allocator_.release(lease.key);
          }
          settle.now();
          done(std::unexpected(written.error()));
          if (first) logUnhealthy(written.error());
          logWriteFailed("grant", lease, written.error());
          return;
        }
        if (options_.writer != nullptr) {
          if (auto installed = options_.writer->install(lease); !installed) {
            undoGrant(lease, installed.error(), std::move(done));
            return;
          }
        }
        settle.now();
        metrics_.observeAllocation(std::chrono::steady_clock::now() - started);
        for (const auto& observer : observers_) {
          if (observer.granted && observer.grantedBeforeAnswer) observer.granted(lease);
        }
        done(lease);
        for (const auto& observer : observers_) {
          if (observer.granted && !observer.grantedBeforeAnswer) observer.granted(lease);
        }
        log::event(Component::kAlloc, Level::kInfo, "alloc.granted",
                   {keyField(lease.key),
                    podField(lease.pod),
                    {"pool", lease.pool},
                    {"ports", portsText(lease.ports)}});
      });
  maybeCompact();
  lock.unlock();
  recording.logBusy();
}

std::string_view AgentService::viaName(ReleaseVia via) {
  switch (via) {
    case ReleaseVia::kRequest:
      return "request";
    case ReleaseVia::kContainer:
      return "container";
    case ReleaseVia::kGc:
      return "gc";
    case ReleaseVia::kVanished:
      return "vanished";
    case ReleaseVia::kReleaseNote:
      return "release_note";
    case ReleaseVia::kFailedInstall:
      return "failed_install";
    case ReleaseVia::kPodGone:
      return "pod_gone";
  }
  return "request";
}

void AgentService::submitRelease(Lease lease, ReleaseVia via,
                                 std::function<void(Result<void>)> done) {
  beginTableWrite(lease.key);
  store_.submit({store::JournalRecord::Kind::kRelease, lease},
                [this, lease, via, done = std::move(done)](Result<void> written) mutable {
                  SettleOnExit settle(*this, lease.key);
                  if (!written) {
                    const bool first = onStoreFailure();
                    Result<void> restored;
                    if (!lease.ports.empty()) {
                      std::lock_guard relock(mutex_);
                      restored = allocator_.restore(lease);
                    }
                    settle.now();
                    done(written);
                    if (first) logUnhealthy(written.error());
                    logWriteFailed("release", lease, written.error());
                    if (!restored) logRestoreFailed(lease, restored.error());
                    return;
                  }
                  const bool released = !lease.ports.empty() || !lease.pool.empty();
                  std::optional<Error> notRemoved;
                  if (released && options_.writer != nullptr) {
                    if (auto removed = options_.writer->remove(lease); !removed) {
                      notRemoved = removed.error();
                    }
                  }
                  // Its forward would take the traffic of the port's next owner (a failed
                  // grant's forwards were never in).
                  if (notRemoved && via != ReleaseVia::kFailedInstall) {
                    undoRelease(lease, *notRemoved, std::move(done));
                    return;
                  }
                  settle.now();
                  if (released) metrics_.countRelease();
                  done(written);
                  if (!released) return;
                  for (const auto& observer : observers_) {
                    if (observer.released) observer.released(lease);
                  }
                  if (notRemoved) {
                    // The reconciler removes what carries our owner tag and has no lease.
                    options_.writer->leftBehind();
                    log::event(Component::kTable, Level::kWarn, "table.remove_failed",
                               {keyField(lease.key), {"cause", notRemoved->message}});
                  }
                  log::event(Component::kAlloc, Level::kInfo, "alloc.released",
                             {keyField(lease.key),
                              podField(lease.pod),
                              {"pool", lease.pool},
                              {"ports", portsText(lease.ports)},
                              {"via", viaName(via)}});
                });
}

void AgentService::undoGrant(const Lease& lease, Error cause,
                             std::function<void(Result<Lease>)> done) {
  const std::string reason = cause.message;
  {
    std::lock_guard lock(mutex_);
    // Unless a DEL got there first: it released the lease and answers for it.
    if (allocator_.find(lease.key) == lease) {
      allocator_.release(lease.key);
      submitRelease(lease, ReleaseVia::kFailedInstall,
                    [cause = std::move(cause), done = std::move(done)](Result<void>) {
                      done(std::unexpected(cause));
                    });
      maybeCompact();
    } else {
      done(std::unexpected(std::move(cause)));
    }
  }
  log::event(Component::kTable, Level::kWarn, "table.install_failed",
             {keyField(lease.key), podField(lease.pod), {"cause", reason}});
}

void AgentService::undoRelease(const Lease& lease, const Error& cause,
                               std::function<void(Result<void>)> done) {
  const std::string what = "the forwards of " + lease.key.str() + " could not be removed";
  Error answer = cause;
  std::unique_lock lock(mutex_);
  if (Result<void> restored = allocator_.restore(lease); !restored) {
    // Another request took a port of it between the release and now: the lease cannot come
    // back, and the reconciler removes what its owner tag still holds.
    lock.unlock();
    options_.writer->leftBehind();
    answer.message = what +
                     ", and a port of its lease was taken meanwhile (the reconciler "
                     "removes them): " +
                     cause.message;
    done(std::unexpected(std::move(answer)));
    log::event(Component::kTable, Level::kError, "table.remove_failed",
               {keyField(lease.key), {"lease", "released"}, {"cause", cause.message}});
    logRestoreFailed(lease, restored.error());
    return;
  }
  answer.message = what + ", so its lease is kept (retry the DEL): " + cause.message;
  store_.submit({store::JournalRecord::Kind::kGrant, lease},
                [this, lease, cause, answer, done = std::move(done)](Result<void> written) {
                  done(std::unexpected(answer));
                  if (!written) {
                    if (onStoreFailure()) logUnhealthy(written.error());
                    logWriteFailed("grant", lease, written.error());
                  }
                  log::event(Component::kTable, Level::kWarn, "table.remove_failed",
                             {keyField(lease.key), {"lease", "kept"}, {"cause", cause.message}});
                });
  maybeCompact();
}

void AgentService::release(const AttachmentKey& key,
                           std::function<void(Result<std::optional<Lease>>)> done) {
  if (!healthy()) {
    done(journalFailedEarlier());
    return;
  }
  std::lock_guard lock(mutex_);
  std::optional<Lease> released = allocator_.release(key);
  Lease record;
  if (released) record = *released;
  record.key = key;
  submitRelease(std::move(record), ReleaseVia::kRequest,
                [released, done = std::move(done)](Result<void> written) {
                  if (!written) {
                    done(std::unexpected(written.error()));
                    return;
                  }
                  done(released);
                });
  maybeCompact();
}

void AgentService::releaseKeys(std::vector<AttachmentKey> keys, ReleaseVia via,
                               std::function<void(Result<std::vector<Lease>>)> done) {
  if (!healthy()) {
    done(journalFailedEarlier());
    return;
  }
  std::lock_guard lock(mutex_);
  auto released = std::make_shared<std::vector<Lease>>();
  for (const auto& key : keys) {
    if (auto lease = allocator_.release(key)) released->push_back(std::move(*lease));
  }
  if (released->empty()) {
    done(std::vector<Lease>{});
    return;
  }
  // The store acknowledges in submission order, so the last callback speaks for all of them.
  auto firstError = std::make_shared<std::optional<Error>>();
  for (std::size_t i = 0; i < released->size(); ++i) {
    const bool last = i + 1 == released->size();
    submitRelease((*released)[i], via, [released, firstError, last, done](Result<void> written) {
      if (!written && !*firstError) *firstError = written.error();
      if (!last) return;
      if (*firstError) {
        done(std::unexpected(**firstError));
      } else {
        done(std::move(*released));
      }
    });
  }
  maybeCompact();
}

void AgentService::releaseContainer(const std::string& containerId,
                                    std::function<void(Result<std::vector<Lease>>)> done) {
  std::vector<AttachmentKey> keys;
  {
    std::lock_guard lock(mutex_);
    allocator_.forEachLease([&](const Lease& lease) {
      if (lease.key.containerId == containerId) keys.push_back(lease.key);
    });
  }
  releaseKeys(std::move(keys), ReleaseVia::kContainer, std::move(done));
}

void AgentService::collectGarbage(const std::string& network, const std::set<AttachmentKey>& valid,
                                  std::function<void(Result<std::vector<Lease>>)> done) {
  if (!healthy()) {
    done(journalFailedEarlier());
    return;
  }
  std::vector<AttachmentKey> keys;
  uint64_t onNetwork = 0;
  {
    std::lock_guard lock(mutex_);
    allocator_.forEachLease([&](const Lease& lease) {
      // A lease without forwarding names no network: no GC can claim it.
      if (!lease.forwarding || lease.forwarding->network != network) return;
      ++onNetwork;
      if (!valid.contains(lease.key)) keys.push_back(lease.key);
    });
  }
  const log::Field networkField = log::untrusted("network", network);
  if (valid.empty() && onNetwork > options_.emptyGcMaxLeases && !options_.allowEmptyGc) {
    done(fail(ErrorCode::kInvalidArgument,
              "GC of network \"" + network + "\" with no valid attachments would release all " +
                  std::to_string(onNetwork) +
                  " of its leases: refused, as a runtime that lost its state must not wipe the "
                  "node (hostport-agent --allow-empty-gc, or emptyGcMaxLeases, allows it)"));
    log::event(Component::kAlloc, Level::kWarn, "alloc.gc_refused",
               {networkField, {"valid", 0}, {"leases", onNetwork}});
    return;
  }
  if (keys.empty()) {  // answered here: releaseKeys() would call back with its lock held
    done(std::vector<Lease>{});
    log::event(Component::kAlloc, Level::kInfo, "alloc.gc",
               {networkField, {"valid", valid.size()}, {"released", 0}});
    return;
  }
  releaseKeys(std::move(keys), ReleaseVia::kGc,
              [networkField, validCount = valid.size(),
               done = std::move(done)](Result<std::vector<Lease>> released) {
                const std::optional<Error> error =
                    released ? std::nullopt : std::optional<Error>(released.error());
                const std::size_t count = released ? released->size() : 0;
                done(std::move(released));
                if (error) {
                  log::event(Component::kAlloc, Level::kWarn, "alloc.gc_failed",
                             {networkField, {"valid", validCount}, {"cause", error->message}});
                  return;
                }
                log::event(Component::kAlloc, Level::kInfo, "alloc.gc",
                           {networkField, {"valid", validCount}, {"released", count}});
              });
}

void AgentService::maybeCompact() {
  if (compactionQueued_ || store_.journalBytes() < options_.compactAfterJournalBytes) return;
  compactionQueued_ = true;
  auto leases = allocator_.leases();
  const std::size_t count = leases.size();
  store_.submitCompaction(
      std::move(leases),
      [this, count](Result<void> written) {
        std::optional<uint64_t> failures;
        {
          std::lock_guard lock(mutex_);
          compactionQueued_ = false;
          // A full disk fails the compaction every request queues: one line a second, counting.
          if (!written) failures = compactionFailedLog_.admit(log::LineThrottle::Clock::now());
        }
        if (written) {
          log::event(Component::kStore, Level::kDebug, "store.compacted", {{"leases", count}});
          return;
        }
        // Failed before its rename, a compaction leaves the old snapshot and journal live and the
        // store working; only one that failed the store (lease_store.h) makes the agent unhealthy.
        const bool storeFailed = store_.stats().failed;
        if (storeFailed) {
          if (onStoreFailure()) logUnhealthy(written.error());
        }
        if (!failures) return;
        log::event(Component::kStore, storeFailed ? Level::kError : Level::kWarn,
                   "store.compaction_failed",
                   {{"cause", written.error().message},
                    {"store_failed", storeFailed},
                    {"failures", *failures}});
      },
      allocator_.stickyEntries());
}

Result<void> AgentService::setPoolRules(const std::string& pool, core::PoolRules rules) {
  std::lock_guard lock(mutex_);
  return allocator_.setRules(pool, std::move(rules));
}

std::optional<Lease> AgentService::get(const AttachmentKey& key) const {
  std::lock_guard lock(mutex_);
  return allocator_.find(key);
}

std::vector<Lease> AgentService::list(const std::string& namespaceName,
                                      const std::string& podName) const {
  std::lock_guard lock(mutex_);
  std::vector<Lease> out;
  allocator_.forEachLease([&](const Lease& lease) {
    if (!namespaceName.empty() && lease.pod.namespaceName != namespaceName) return;
    if (!podName.empty() && lease.pod.name != podName) return;
    out.push_back(lease);
  });
  return out;
}

std::vector<AttachmentKey> AgentService::forEachLeaseChunk(
    const std::function<void(std::span<const Lease>)>& visit) const {
  std::vector<Lease> chunk;
  chunk.reserve(kLeaseChunk);
  std::optional<uint32_t> next = 0;
  while (next) {
    chunk.clear();
    {
      std::lock_guard lock(mutex_);
      next = allocator_.forEachLeaseHeldFrom(*next, kLeaseChunk,
                                             [&](const Lease& lease) { chunk.push_back(lease); });
    }
    if (!chunk.empty()) visit(chunk);
  }
  std::vector<AttachmentKey> settling;
  std::lock_guard lock(mutex_);
  settling.reserve(settling_.size());
  for (const auto& [key, writes] : settling_) settling.push_back(key);
  return settling;
}

std::vector<std::optional<Lease>> AgentService::leasesOf(
    std::span<const AttachmentKey> keys) const {
  std::vector<std::optional<Lease>> found;
  found.reserve(keys.size());
  while (found.size() < keys.size()) {
    // A chunk per hold, as forEachLeaseChunk(): a restore after a flush asks for every lease.
    std::lock_guard lock(mutex_);
    const std::size_t end = std::min(keys.size(), found.size() + kLeaseChunk);
    for (std::size_t i = found.size(); i < end; ++i) found.push_back(allocator_.find(keys[i]));
  }
  return found;
}

void AgentService::beginTableWrite(const AttachmentKey& key) { ++settling_[key]; }

void AgentService::settled(const AttachmentKey& key) {
  std::lock_guard lock(mutex_);
  const auto found = settling_.find(key);
  if (found != settling_.end() && --found->second == 0) settling_.erase(found);
}

std::vector<Lease> AgentService::leasesInNetns(const NetnsId& netns) const {
  std::lock_guard lock(mutex_);
  return allocator_.leasesInNetns(netns);
}

std::vector<Lease> AgentService::leasesOfPod(std::string_view uid) const {
  std::lock_guard lock(mutex_);
  return allocator_.leasesOfPod(uid);
}

std::vector<SandboxRef> AgentService::sandboxes() const {
  std::vector<SandboxRef> out;
  (void)forEachLeaseChunk([&](std::span<const Lease> chunk) {
    for (const Lease& lease : chunk) {
      if (lease.netnsId.known()) out.push_back(sandboxOf(lease));
    }
  });
  return out;
}

std::vector<api::PoolUsageRow> AgentService::poolRows() const {
  std::lock_guard lock(mutex_);
  const auto& specs = allocator_.pools();
  std::vector<api::PoolUsageRow> rows;
  for (const auto& usage : allocator_.usage()) {
    api::PoolUsageRow row;
    row.name = usage.name;
    row.size = usage.size;
    row.used = usage.used;
    row.free = usage.size - usage.used;
    for (const auto& spec : specs) {
      if (spec.name != usage.name) continue;
      row.strategy = std::string(core::strategyName(spec.strategy));
      row.ranges = spec.ranges;
      row.namespaces = spec.rules.namespaces;
      row.maxPortsPerNamespace = spec.rules.maxPortsPerNamespace;
      row.maxPortsPerPod = spec.rules.maxPortsPerPod;
    }
    for (const auto& entry : usage.namespaces)
      row.namespaceUsage.push_back({entry.name, entry.used});
    rows.push_back(std::move(row));
  }
  return rows;
}

std::string AgentService::metricsText() const {
  std::lock_guard lock(mutex_);
  const auto stats = store_.stats();
  StoreFigures figures{stats.records, stats.batches, stats.fsyncs, store_.journalBytes()};
  return metrics_.render(allocator_.leaseCount(), allocator_.usage(), allocator_.hostConflicts(),
                         staticConflicts_.load(), figures);
}

}  // namespace hostport::agent::service
