#include "agent/service/forward_writer.h"

#include <algorithm>

#include "agent/log/event_log.h"
#include "forwards/lease_forwards.h"
#include "forwards/plan_writer.h"

namespace hostport::agent::service {
namespace {

using log::Component;
using log::Level;

log::Field keyField(const AttachmentKey& key) { return log::untrusted("key", key.str()); }

/// The agent reports as events naming the lease.
class EventReport : public forwards::WriteReport {
 public:
  explicit EventReport(const AttachmentKey& key) : key_(key) {}
  void rollbackFailed(const Error& cause) override {
    log::event(Component::kTable, Level::kError, "table.rollback_failed",
               {keyField(key_), {"cause", cause.message}});
  }
  void conntrackFlushFailed(uint16_t port, const Error& cause) override {
    log::event(Component::kTable, Level::kWarn, "table.conntrack_flush_failed",
               {keyField(key_), {"port", port}, {"cause", cause.message}});
  }

 private:
  const AttachmentKey& key_;
};

/// A restore batch's report: what goes wrong after its transaction names the port or the cause.
class BatchReport : public forwards::WriteReport {
 public:
  void rollbackFailed(const Error& cause) override {
    log::event(Component::kTable, Level::kError, "table.rollback_failed",
               {{"cause", cause.message}});
  }
  void conntrackFlushFailed(uint16_t port, const Error& cause) override {
    if (++failures > 1) return;  // one flush for the batch: one cause for all its ports
    log::event(Component::kTable, Level::kWarn, "table.conntrack_flush_failed",
               {{"port", port}, {"cause", cause.message}});
  }

 private:
  std::size_t failures = 0;
};

}  // namespace

ForwardWriter::ForwardWriter(std::unique_ptr<nft::Ruleset> ruleset,
                             std::unique_ptr<hostnet::HostNetwork> network)
    : ruleset_(std::move(ruleset)), network_(std::move(network)) {}

Result<void> ForwardWriter::install(const Lease& lease) {
  std::lock_guard guard(mutex_);
  if (!lease.forwarding) return {};
  HOSTPORT_TRY(const nft::AttachmentPlan plan, forwards::planOf(lease));
  // What a request cannot show by itself: whether its ports reach the pod at all (hostIPs of a
  // family it lacks) and whether its address is the node's own. A restore does not ask again.
  HOSTPORT_TRY_VOID(nft::requireForwards(plan));
  HOSTPORT_TRY_VOID(forwards::refuseNodeTargets(plan, network()));
  return writeLocked(lease.key, plan);
}

Result<void> ForwardWriter::remove(const Lease& lease) {
  std::lock_guard guard(mutex_);
  auto removed = removeLocked(lease);
  if (!removed) failedWrite_ = true;
  return removed;
}

void ForwardWriter::onLeftBehind(std::function<void()> hook) {
  std::lock_guard guard(hookMutex_);
  leftBehind_ = std::move(hook);
}

void ForwardWriter::leftBehind() {
  std::lock_guard guard(hookMutex_);
  if (leftBehind_) leftBehind_();
}

Result<void> ForwardWriter::installLocked(const Lease& lease) {
  if (!lease.forwarding) return {};
  HOSTPORT_TRY(const nft::AttachmentPlan plan, forwards::planOf(lease));
  return writeLocked(lease.key, plan);
}

std::vector<Result<void>> ForwardWriter::restoreLocked(std::span<const Lease* const> leases) {
  std::vector<Result<void>> results(leases.size());
  std::vector<nft::AttachmentPlan> plans;
  std::vector<std::size_t> planned;  // where each plan's result goes
  for (std::size_t i = 0; i < leases.size(); ++i) {
    if (!leases[i]->forwarding) continue;
    auto plan = forwards::planOf(*leases[i]);
    if (!plan) {
      results[i] = std::unexpected(plan.error());
      continue;
    }
    plans.push_back(std::move(*plan));
    planned.push_back(i);
  }
  for (std::size_t first = 0; first < plans.size(); first += kRestoreBatch) {
    const std::size_t count = std::min(kRestoreBatch, plans.size() - first);
    BatchReport report;
    auto written =
        forwards::writePlans(std::span(plans).subspan(first, count), *ruleset_, network(), report);
    for (std::size_t j = 0; j < count; ++j) {
      if (!written[j]) failedWrite_ = true;
      results[planned[first + j]] = std::move(written[j]);
    }
  }
  return results;
}

Result<void> ForwardWriter::writeLocked(const AttachmentKey& key, const nft::AttachmentPlan& plan) {
  EventReport report(key);
  auto written = forwards::writePlan(plan, *ruleset_, network(), report);
  if (!written) failedWrite_ = true;
  return written;
}

Result<void> ForwardWriter::removeLocked(const Lease& lease) {
  // No forwarding record, nothing written: what someone else put under its tag is a stray the
  // reconciler removes, and looking for it here would list the whole table (~0.35 s at 65,535
  // leases under this lock) at every hostNetwork pod's release.
  if (!lease.forwarding) return {};
  EventReport report(lease.key);
  HOSTPORT_TRY(const nft::AttachmentPlan plan, forwards::planOf(lease));
  HOSTPORT_TRY_VOID(ruleset_->removeExact(plan.rules));
  forwards::flushUdpConntrack(plan.udpHostPorts, network(), report);
  return {};
}

forwards::HostNetworkAccess ForwardWriter::network() {
  return [this]() -> Result<hostnet::HostNetwork*> { return network_.get(); };
}

}  // namespace hostport::agent::service
