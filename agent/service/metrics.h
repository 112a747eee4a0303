#pragma once
// Prometheus text metrics. Counters are atomics so handlers on any thread can bump them; gauges
// (leases, free ports) are read from the allocator when /metrics is scraped.

#include <array>
#include <atomic>
#include <chrono>
#include <functional>
#include <map>
#include <mutex>
#include <string>
#include <vector>

#include "agent/core/allocator.h"
#include "common/duration_histogram.h"
#include "common/prometheus_text.h"

namespace hostport::agent::service {

struct StoreFigures {
  uint64_t records = 0;
  uint64_t batches = 0;
  uint64_t fsyncs = 0;
  uint64_t journalBytes = 0;
};

class Metrics {
 public:
  void observeAllocation(std::chrono::nanoseconds latency);
  void countError(const std::string& code);
  void countRelease() { releases_.fetch_add(1, std::memory_order_relaxed); }
  /// A request a pool's rules refused (hostport_allocation_refusals_total{pool,reason}).
  void countRefusal(const std::string& pool, core::Refusal reason);

  /// What the reconciler repaired (reconciler.h).
  enum class Repair : uint8_t { kLayout, kMissing, kStray };
  /// One pass; `compared`: it compared the table with the leases (false: the ruleset's
  /// generation had not moved since the last compare, so there was nothing to compare).
  void observeReconcile(std::chrono::nanoseconds took, bool compared);
  void countRepairs(Repair kind, uint64_t count) {
    repairs_[static_cast<std::size_t>(kind)].fetch_add(count, std::memory_order_relaxed);
  }
  void countVanished(uint64_t count) { vanished_.fetch_add(count, std::memory_order_relaxed); }

  /// Families another part of the agent writes (the cluster publisher's), appended to the
  /// exposition. Added before anything serves /metrics.
  void addSource(std::function<void(prometheus::TextWriter&)> write) {
    sources_.push_back(std::move(write));
  }

  /// The whole exposition. `hostConflicts` comes from the allocator, which counts them.
  std::string render(std::size_t leases, const std::vector<core::PoolUsage>& pools,
                     uint64_t hostConflicts, uint64_t staticConflicts,
                     const StoreFigures& store) const;

 private:
  prometheus::DurationHistogram<12> allocationLatency_{
      {0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 1.0}};
  std::atomic<uint64_t> releases_{0};
  std::atomic<uint64_t> reconciles_{0};
  std::atomic<uint64_t> lastReconcileNanos_{0};
  std::atomic<uint64_t> unchangedReconciles_{0};
  std::atomic<uint64_t> lastCompareNanos_{0};
  std::array<std::atomic<uint64_t>, 3> repairs_{};
  std::atomic<uint64_t> vanished_{0};
  std::vector<std::function<void(prometheus::TextWriter&)>> sources_;
  mutable std::mutex errorsMutex_;
  std::map<std::string, uint64_t> errors_;
  std::map<std::pair<std::string, core::Refusal>, uint64_t> refusals_;  // under errorsMutex_
};

}  // namespace hostport::agent::service
