#include "agent/service/metrics.h"

namespace hostport::agent::service {

void Metrics::observeAllocation(std::chrono::nanoseconds latency) {
  allocationLatency_.observe(latency);
}

void Metrics::countError(const std::string& code) {
  std::lock_guard lock(errorsMutex_);
  ++errors_[code];
}

void Metrics::countRefusal(const std::string& pool, core::Refusal reason) {
  std::lock_guard lock(errorsMutex_);
  ++refusals_[{pool, reason}];
}

void Metrics::observeReconcile(std::chrono::nanoseconds took, bool compared) {
  reconciles_.fetch_add(1, std::memory_order_relaxed);
  const auto nanos = static_cast<uint64_t>(took.count());
  lastReconcileNanos_.store(nanos, std::memory_order_relaxed);
  if (compared) {
    lastCompareNanos_.store(nanos, std::memory_order_relaxed);
  } else {
    unchangedReconciles_.fetch_add(1, std::memory_order_relaxed);
  }
}

std::string Metrics::render(std::size_t leases, const std::vector<core::PoolUsage>& pools,
                            uint64_t hostConflicts, uint64_t staticConflicts,
                            const StoreFigures& store) const {
  using prometheus::Type;
  const auto load = [](const std::atomic<uint64_t>& counter) {
    return counter.load(std::memory_order_relaxed);
  };
  const auto seconds = [&load](const std::atomic<uint64_t>& nanos) {
    return static_cast<double>(load(nanos)) / 1e9;
  };
  prometheus::TextWriter out;
  out.family("hostport_leases", Type::kGauge, "Attachments holding a lease.");
  out.sample("hostport_leases", uint64_t{leases});
  out.family("hostport_pool_ports", Type::kGauge, "Ports in a pool.");
  for (const auto& pool : pools) {
    out.sample("hostport_pool_ports", uint64_t{pool.size}, {{"pool", pool.name}});
  }
  out.family("hostport_pool_free_ports", Type::kGauge, "Ports of a pool that no lease holds.");
  for (const auto& pool : pools) {
    out.sample("hostport_pool_free_ports", uint64_t{pool.size - pool.used}, {{"pool", pool.name}});
  }
  out.family("hostport_pool_quarantined_ports", Type::kGauge,
             "Free ports of a pool within their reuse delay: granted only when no other is free.");
  for (const auto& pool : pools) {
    out.sample("hostport_pool_quarantined_ports", uint64_t{pool.quarantined},
               {{"pool", pool.name}});
  }
  out.family("hostport_allocation_duration_seconds", Type::kHistogram,
             "Time from request to durable allocation.");
  allocationLatency_.write(out, "hostport_allocation_duration_seconds");
  out.family("hostport_releases_total", Type::kCounter, "Leases released.");
  out.sample("hostport_releases_total", load(releases_));
  out.family("hostport_reconciles_total", Type::kCounter,
             "Passes of the reconciler (kernel vs leases).");
  out.sample("hostport_reconciles_total", load(reconciles_));
  out.family("hostport_reconcile_last_duration_seconds", Type::kGauge,
             "How long the last pass took.");
  out.sample("hostport_reconcile_last_duration_seconds", seconds(lastReconcileNanos_));
  out.family("hostport_reconciles_unchanged_total", Type::kCounter,
             "Passes that found the nf_tables generation where the last compare left it, so "
             "compared nothing.");
  out.sample("hostport_reconciles_unchanged_total", load(unchangedReconciles_));
  out.family("hostport_reconcile_last_compare_duration_seconds", Type::kGauge,
             "How long the last pass that compared the table with every lease took.");
  out.sample("hostport_reconcile_last_compare_duration_seconds", seconds(lastCompareNanos_));
  out.family("hostport_repairs_total", Type::kCounter,
             "What the reconciler repaired: the fixed layout, missing forwards of a lease (one per "
             "lease), stray owner-tagged elements without a lease (one per owner).");
  for (const auto& [kind, name] :
       {std::pair{Repair::kLayout, "layout"}, std::pair{Repair::kMissing, "missing"},
        std::pair{Repair::kStray, "stray"}}) {
    out.sample("hostport_repairs_total", load(repairs_[static_cast<std::size_t>(kind)]),
               {{"kind", name}});
  }
  out.family("hostport_leases_vanished_total", Type::kCounter,
             "Leases released because their sandbox's netns was gone.");
  out.sample("hostport_leases_vanished_total", load(vanished_));
  out.family("hostport_conflicts_total", Type::kCounter,
             "Ports found taken: by a host socket, or a static claim against another lease.");
  out.sample("hostport_conflicts_total", hostConflicts, {{"kind", "host_socket"}});
  out.sample("hostport_conflicts_total", staticConflicts, {{"kind", "static_claim"}});
  {
    std::lock_guard lock(errorsMutex_);
    out.family("hostport_errors_total", Type::kCounter, "Requests that failed, by error code.");
    for (const auto& [code, n] : errors_) out.sample("hostport_errors_total", n, {{"code", code}});
    out.family("hostport_allocation_refusals_total", Type::kCounter,
               "Requests a pool's rules refused, by pool and reason: namespace (not in the pool's "
               "namespaces), namespace_quota (maxPortsPerNamespace), pod_quota (maxPortsPerPod).");
    for (const auto& [key, n] : refusals_) {
      out.sample("hostport_allocation_refusals_total", n,
                 {{"pool", key.first}, {"reason", core::refusalName(key.second)}});
    }
  }
  out.family("hostport_journal_records_total", Type::kCounter,
             "Records written to the lease journal.");
  out.sample("hostport_journal_records_total", store.records);
  out.family("hostport_journal_fsyncs_total", Type::kCounter, "fdatasync calls on the journal.");
  out.sample("hostport_journal_fsyncs_total", store.fsyncs);
  out.family("hostport_journal_bytes", Type::kGauge, "Journal bytes since the last snapshot.");
  out.sample("hostport_journal_bytes", store.journalBytes);
  for (const auto& source : sources_) source(out);
  return out.text();
}

}  // namespace hostport::agent::service
