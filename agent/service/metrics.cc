#include "agent/service/metrics.h"

#include <sstream>

namespace hostport::agent::service {

void Metrics::observeAllocation(std::chrono::nanoseconds latency) {
  const double seconds = std::chrono::duration<double>(latency).count();
  for (std::size_t i = 0; i < kBuckets.size(); ++i) {
    if (seconds <= kBuckets[i]) bucketCounts_[i].fetch_add(1, std::memory_order_relaxed);
  }
  allocations_.fetch_add(1, std::memory_order_relaxed);
  latencyNanos_.fetch_add(static_cast<uint64_t>(latency.count()), std::memory_order_relaxed);
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
  std::ostringstream out;
  const auto family = [&out](const char* name, const char* type, const char* help) {
    out << "# HELP " << name << " " << help << "\n# TYPE " << name << " " << type << "\n";
  };
  family("hostport_leases", "gauge", "Attachments holding a lease.");
  out << "hostport_leases " << leases << "\n";
  family("hostport_pool_ports", "gauge", "Ports in a pool.");
  for (const auto& pool : pools) {
    out << "hostport_pool_ports{pool=\"" << pool.name << "\"} " << pool.size << "\n";
  }
  family("hostport_pool_free_ports", "gauge", "Ports of a pool that no lease holds.");
  for (const auto& pool : pools) {
    out << "hostport_pool_free_ports{pool=\"" << pool.name << "\"} " << pool.size - pool.used
        << "\n";
  }
  family("hostport_pool_quarantined_ports", "gauge",
         "Free ports of a pool within their reuse delay: granted only when no other is free.");
  for (const auto& pool : pools) {
    out << "hostport_pool_quarantined_ports{pool=\"" << pool.name << "\"} " << pool.quarantined
        << "\n";
  }
  family("hostport_allocation_duration_seconds", "histogram",
         "Time from request to durable allocation.");
  for (std::size_t i = 0; i < kBuckets.size(); ++i) {
    out << "hostport_allocation_duration_seconds_bucket{le=\"" << kBuckets[i] << "\"} "
        << bucketCounts_[i].load(std::memory_order_relaxed) << "\n";
  }
  const auto count = allocations_.load(std::memory_order_relaxed);
  out << "hostport_allocation_duration_seconds_bucket{le=\"+Inf\"} " << count << "\n"
      << "hostport_allocation_duration_seconds_sum "
      << static_cast<double>(latencyNanos_.load(std::memory_order_relaxed)) / 1e9 << "\n"
      << "hostport_allocation_duration_seconds_count " << count << "\n";
  family("hostport_releases_total", "counter", "Leases released.");
  out << "hostport_releases_total " << releases_.load(std::memory_order_relaxed) << "\n";
  family("hostport_reconciles_total", "counter", "Passes of the reconciler (kernel vs leases).");
  out << "hostport_reconciles_total " << reconciles_.load(std::memory_order_relaxed) << "\n";
  family("hostport_reconcile_last_duration_seconds", "gauge", "How long the last pass took.");
  out << "hostport_reconcile_last_duration_seconds "
      << static_cast<double>(lastReconcileNanos_.load(std::memory_order_relaxed)) / 1e9 << "\n";
  family("hostport_reconciles_unchanged_total", "counter",
         "Passes that found the nf_tables generation where the last compare left it, so compared "
         "nothing.");
  out << "hostport_reconciles_unchanged_total "
      << unchangedReconciles_.load(std::memory_order_relaxed) << "\n";
  family("hostport_reconcile_last_compare_duration_seconds", "gauge",
         "How long the last pass that compared the table with every lease took.");
  out << "hostport_reconcile_last_compare_duration_seconds "
      << static_cast<double>(lastCompareNanos_.load(std::memory_order_relaxed)) / 1e9 << "\n";
  family("hostport_repairs_total", "counter",
         "What the reconciler repaired: the fixed layout, missing forwards of a lease (one per "
         "lease), stray owner-tagged elements without a lease (one per owner).");
  for (const auto& [kind, name] :
       {std::pair{Repair::kLayout, "layout"}, std::pair{Repair::kMissing, "missing"},
        std::pair{Repair::kStray, "stray"}}) {
    out << "hostport_repairs_total{kind=\"" << name << "\"} "
        << repairs_[static_cast<std::size_t>(kind)].load(std::memory_order_relaxed) << "\n";
  }
  family("hostport_leases_vanished_total", "counter",
         "Leases released because their sandbox's netns was gone.");
  out << "hostport_leases_vanished_total " << vanished_.load(std::memory_order_relaxed) << "\n";
  family("hostport_conflicts_total", "counter",
         "Ports found taken: by a host socket, or a static claim against another lease.");
  out << "hostport_conflicts_total{kind=\"host_socket\"} " << hostConflicts << "\n"
      << "hostport_conflicts_total{kind=\"static_claim\"} " << staticConflicts << "\n";
  family("hostport_errors_total", "counter", "Requests that failed, by error code.");
  {
    std::lock_guard lock(errorsMutex_);
    for (const auto& [code, n] : errors_) {
      out << "hostport_errors_total{code=\"" << code << "\"} " << n << "\n";
    }
  }
  family("hostport_allocation_refusals_total", "counter",
         "Requests a pool's rules refused, by pool and reason: namespace (not in the pool's "
         "namespaces), namespace_quota (maxPortsPerNamespace), pod_quota (maxPortsPerPod).");
  {
    std::lock_guard lock(errorsMutex_);
    for (const auto& [key, n] : refusals_) {
      out << "hostport_allocation_refusals_total{pool=\"" << key.first << "\",reason=\""
          << core::refusalName(key.second) << "\"} " << n << "\n";
    }
  }
  family("hostport_journal_records_total", "counter", "Records written to the lease journal.");
  out << "hostport_journal_records_total " << store.records << "\n";
  family("hostport_journal_fsyncs_total", "counter", "fdatasync calls on the journal.");
  out << "hostport_journal_fsyncs_total " << store.fsyncs << "\n";
  family("hostport_journal_bytes", "gauge", "Journal bytes since the last snapshot.");
  out << "hostport_journal_bytes " << store.journalBytes << "\n";
  for (const auto& source : sources_) out << source();
  return out.str();
}

}  // namespace hostport::agent::service
