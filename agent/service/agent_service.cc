#include "agent/service/agent_service.h"

#include <chrono>

namespace hostport::agent {

AgentService::AgentService(Allocator allocator, store::LeaseStore& store, ProbeFactory probes,
                           Metrics& metrics, ServiceOptions options)
    : allocator_(std::move(allocator)),
      store_(store),
      probes_(std::move(probes)),
      metrics_(metrics),
      options_(options) {}

void AgentService::onStoreFailure(const Error& error) {
  healthy_ = false;
  metrics_.countError("journal_write");
  (void)error;
}

void AgentService::allocate(const AllocationRequest& request,
                            std::function<void(Result<Lease>)> done) {
  const auto started = std::chrono::steady_clock::now();
  if (!healthy()) {
    done(fail(ErrorCode::kUnavailable, "the lease journal failed; the agent must restart"));
    return;
  }
  // The host's sockets are read before the lock: the snapshot is per request, narrowed to what
  // the request can ask about (socket_probe.h).
  auto probe = probes_(request);
  if (!probe) {
    done(std::unexpected(probe.error()));
    return;
  }
  std::lock_guard lock(mutex_);
  auto lease = allocator_.allocate(request, **probe);
  if (!lease) {
    if (lease.error().code == ErrorCode::kConflict) ++staticConflicts_;
    done(std::unexpected(lease.error()));
    return;
  }
  // Also for a repeated ADD: the first one's record may not be durable yet, and this reply
  // must not overtake it. Replaying the same grant twice is harmless.
  store_.submit({store::JournalRecord::Kind::kGrant, *lease},
                [this, lease = *lease, started, done = std::move(done)](Result<void> written) {
                  if (!written) {
                    onStoreFailure(written.error());
                    std::lock_guard relock(mutex_);
                    allocator_.release(lease.key);
                    done(std::unexpected(written.error()));
                    return;
                  }
                  metrics_.observeAllocation(std::chrono::steady_clock::now() - started);
                  done(lease);
                });
  maybeCompact();
}

void AgentService::submitRelease(Lease lease, std::function<void(Result<void>)> done) {
  store_.submit({store::JournalRecord::Kind::kRelease, lease},
                [this, lease, done = std::move(done)](Result<void> written) {
                  if (!written) {
                    onStoreFailure(written.error());
                    std::lock_guard relock(mutex_);
                    if (!lease.ports.empty()) (void)allocator_.restore(lease);
                  } else if (!lease.ports.empty() || !lease.pool.empty()) {
                    metrics_.countRelease();
                  }
                  done(written);
                });
}

void AgentService::release(const AttachmentKey& key,
                           std::function<void(Result<std::optional<Lease>>)> done) {
  if (!healthy()) {
    done(fail(ErrorCode::kUnavailable, "the lease journal failed; the agent must restart"));
    return;
  }
  std::lock_guard lock(mutex_);
  std::optional<Lease> released = allocator_.release(key);
  Lease record = released ? *released : Lease{key, {}, {}, {}, {}};
  submitRelease(std::move(record), [released, done = std::move(done)](Result<void> written) {
    if (!written) {
      done(std::unexpected(written.error()));
      return;
    }
    done(released);
  });
  maybeCompact();
}

void AgentService::releaseMany(std::vector<AttachmentKey> keys,
                               std::function<void(Result<std::vector<Lease>>)> done) {
  if (!healthy()) {
    done(fail(ErrorCode::kUnavailable, "the lease journal failed; the agent must restart"));
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
    submitRelease((*released)[i], [released, firstError, last, done](Result<void> written) {
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
  releaseMany(std::move(keys), std::move(done));
}

void AgentService::collectGarbage(const std::set<AttachmentKey>& valid,
                                  std::function<void(Result<std::vector<Lease>>)> done) {
  std::vector<AttachmentKey> keys;
  {
    std::lock_guard lock(mutex_);
    allocator_.forEachLease([&](const Lease& lease) {
      if (!valid.contains(lease.key)) keys.push_back(lease.key);
    });
  }
  releaseMany(std::move(keys), std::move(done));
}

void AgentService::maybeCompact() {
  if (compactionQueued_ || store_.journalBytes() < options_.compactAfterJournalBytes) return;
  compactionQueued_ = true;
  store_.submitCompaction(allocator_.leases(), [this](Result<void> written) {
    std::lock_guard lock(mutex_);
    compactionQueued_ = false;
    if (!written) onStoreFailure(written.error());
  });
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

std::vector<PoolUsage> AgentService::usage() const {
  std::lock_guard lock(mutex_);
  return allocator_.usage();
}

std::vector<PoolSpec> AgentService::pools() const {
  std::lock_guard lock(mutex_);
  return allocator_.pools();
}

std::string AgentService::metricsText() const {
  std::lock_guard lock(mutex_);
  const auto stats = store_.stats();
  StoreFigures figures{stats.records, stats.batches, stats.fsyncs, store_.journalBytes()};
  return metrics_.render(allocator_.leaseCount(), allocator_.usage(), allocator_.hostConflicts(),
                         staticConflicts_.load(), figures);
}

}  // namespace hostport::agent
