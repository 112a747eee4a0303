#pragma once
// Claims a pod's ports in a cluster pool through the API server (port_claim.h), at admission, on
// the webhook's threads. Candidates come from the watch-fed cache (claim_book.h); the API server's
// create decides: 201 is ours, 409 is another holder's (the next candidate is tried) unless the
// Lease already names this holder (a retried review, a reinvoked webhook), which is ours again.
// A pod's entries are claimed all or none: a range is one Lease per port, and whatever this call
// created is deleted again when a later port or entry fails. A holder that already has an
// entry's block (a StatefulSet pod re-created under its name) gets that block back.
//
// Blocking; any number of threads. Creates and deletes go through a pool of API clients, one per
// serving thread, each with its connection (a client paces and retries, for one thread at a
// time); the informer that feeds the cache has a client of its own.

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "admission/claim_book.h"
#include "common/error.h"
#include "common/prometheus_text.h"
#include "kube/informer.h"
#include "kube/kube_client.h"
#include "lease/lease.h"

namespace hostport::admission {

/// What one entry of hostport.io/ports was given.
struct ClaimedEntry {
  std::string name;
  uint16_t first = 0;
  uint16_t count = 1;
  friend bool operator==(const ClaimedEntry&, const ClaimedEntry&) = default;
};

struct ClaimerOptions {
  std::string namespaceName;  // where every claim Lease lives
  /// Conflicts (409 from another holder) one entry may meet before the claim gives up.
  uint32_t maxConflicts = 64;
  /// How long a claim waits for the cache's first list.
  std::chrono::milliseconds syncWait{5000};
};

class ClusterClaimer {
 public:
  /// `clients` create and delete (at least one); `watchClient` lists and watches (a watch holds
  /// its connection). Starts the informer's thread.
  ClusterClaimer(std::vector<std::unique_ptr<kube::KubeClient>> clients,
                 std::unique_ptr<kube::KubeClient> watchClient,
                 const std::vector<agent::core::PoolSpec>& pools, ClaimerOptions options,
                 std::function<void(const kube::InformerNote&)> note = {});
  ~ClusterClaimer();  // stops the informer

  bool isClusterPool(std::string_view pool) const { return book_.hasPool(pool); }

  /// Claims every entry of `dynamics` in `pool` for `holder`, in order. Errors: kExhausted when
  /// the pool has no free block for an entry (named, with the pool's size and claims), kConflict
  /// after maxConflicts conflicts, kUnavailable when the API server cannot be asked or the cache
  /// has not listed yet; or `accept`'s error, when it refuses what was claimed. Nothing this call
  /// created is left behind on an error.
  using Accept = std::function<Result<void>(const std::vector<ClaimedEntry>&)>;
  Result<std::vector<ClaimedEntry>> claim(const std::string& holder, const std::string& pool,
                                          const std::vector<DynamicPortRequest>& dynamics,
                                          const Accept& accept);

  void writeMetrics(prometheus::TextWriter& out) const;
  const ClaimBook& book() const { return book_; }

 private:
  /// The entry's block for `holder`: its own again, or a new one.
  Result<ClaimedEntry> claimEntry(const std::string& holder, const std::string& pool,
                                  const DynamicPortRequest& entry, std::vector<PortClaim>& made);
  enum class Created { kOurs, kTaken };
  /// Creates the Lease of `claim`; kTaken when another holder has it.
  Result<Created> create(const PortClaim& claim);
  /// Deletes Leases this call created, best effort: one left behind is freed by the repair loop.
  void undo(const std::vector<PortClaim>& made);
  Result<kube::KubeResponse> send(const kube::ApiRequest& request);
  std::string collection() const;

  ClaimerOptions options_;
  ClaimBook book_;
  std::mutex clientMutex_;  // guards idle_
  std::condition_variable clientFree_;
  std::vector<std::unique_ptr<kube::KubeClient>> clients_;
  std::vector<kube::KubeClient*> idle_;
  std::unique_ptr<kube::KubeClient> watchClient_;
  std::unique_ptr<kube::Informer> informer_;
  std::jthread informerThread_;

  std::atomic<uint64_t> claimed_{0};    // Leases created
  std::atomic<uint64_t> reclaimed_{0};  // entries given back to their holder
  std::atomic<uint64_t> conflicts_{0};  // creates refused with 409 by another holder
  std::atomic<uint64_t> undone_{0};     // Leases deleted after a failed claim
  std::atomic<uint64_t> failures_{0};   // claims refused (exhausted, unavailable)
};

}  // namespace hostport::admission
