#pragma once
// The release of cluster pools' claims whose pods are gone (orphan_claims.h decides which), run
// by one admission replica at a time: the leader, elected through a coordination.k8s.io Lease as
// client-go's leader election does (holderIdentity, leaseDurationSeconds, renewTime; a record
// that has not changed for a lease duration, as this replica observed it, may be taken over, so
// clocks need not agree). A replica that stops hands the Lease over at once (an empty holder).
// Each pass lists the claims, the pods and the StatefulSets, and deletes an orphan's Lease with
// its resourceVersion as precondition, so a port claimed again meanwhile is never released.
// A new leader counts from nothing: a failover can delay a release, never hasten one.

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <memory>
#include <mutex>
#include <string>
#include <thread>

#include "admission/orphan_claims.h"
#include "common/prometheus_text.h"
#include "kube/kube_client.h"

namespace hostport::admission {

struct RepairOptions {
  std::string namespaceName;  // of the claims and of the leader Lease
  std::string identity;       // this replica's holderIdentity
  std::string leaseName = "hostport-admission-claims";
  std::chrono::seconds grace{300};  // claimGraceSeconds
  uint32_t passes = 3;
  std::chrono::seconds leaseDuration{15};  // client-go's defaults
  std::chrono::milliseconds retryPeriod{2000};
};

class ClaimRepair {
 public:
  /// Starts the loop on a thread of its own, with `client` alone.
  ClaimRepair(std::unique_ptr<kube::KubeClient> client, RepairOptions options);
  ~ClaimRepair();  // stop()

  /// Ends the loop; the Lease is handed over when this replica leads. Any thread.
  void stop();
  bool leading() const { return leading_.load(); }
  void writeMetrics(prometheus::TextWriter& out) const;

 private:
  using Clock = std::chrono::steady_clock;
  void run();
  /// Takes or renews the leadership; false when another leads or the API cannot be asked.
  bool lead(Clock::time_point now);
  void handOver();
  /// One pass: list, judge, release.
  Result<void> repair(Clock::time_point now);
  Result<ClaimHolders> holders();
  std::string leasePath() const;  // the leader Lease's

  std::unique_ptr<kube::KubeClient> client_;
  RepairOptions options_;
  OrphanClaims orphans_;

  // What this replica last saw of the leader Lease, and when it changed (client-go's
  // observedRecord and observedTime).
  std::string observedRecord_;
  Clock::time_point observedAt_{};

  std::mutex mutex_;  // guards stopped_
  std::condition_variable wake_;
  bool stopped_ = false;
  std::atomic<bool> leading_{false};
  std::atomic<uint64_t> passes_{0};
  std::atomic<uint64_t> failedPasses_{0};
  std::atomic<uint64_t> released_{0};
  std::atomic<uint64_t> missing_{0};
  std::atomic<uint64_t> transitions_{0};  // times this replica became the leader
  std::jthread thread_;
};

}  // namespace hostport::admission
