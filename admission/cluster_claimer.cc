#include "admission/cluster_claimer.h"

#include <random>

#include "common/quote.h"

namespace hostport::admission {
namespace {

using nlohmann::json;

constexpr std::string_view kJson = "application/json";

}  // namespace

ClusterClaimer::ClusterClaimer(std::vector<std::unique_ptr<kube::KubeClient>> clients,
                               std::unique_ptr<kube::KubeClient> watchClient,
                               const std::vector<agent::core::PoolSpec>& pools,
                               ClaimerOptions options,
                               std::function<void(const kube::InformerNote&)> note)
    : options_(std::move(options)),
      book_(pools,
            [random = std::mt19937_64(std::random_device{}())]() mutable { return random(); }),
      clients_(std::move(clients)),
      watchClient_(std::move(watchClient)) {
  for (const auto& client : clients_) idle_.push_back(client.get());
  kube::InformerOptions watched;
  watched.collection = collection();
  watched.labelSelector = std::string(kClaimPoolLabel);
  kube::InformerHandlers handlers;
  handlers.replace = [this](std::vector<json> items) {
    std::vector<PortClaim> claims;
    claims.reserve(items.size());
    for (const json& item : items) {
      if (auto claim = readClaimLease(item)) claims.push_back(std::move(*claim));
    }
    book_.replace(claims);
  };
  handlers.apply = [this](kube::WatchEventType type, json object) {
    const auto claim = readClaimLease(object);
    if (!claim) return;
    if (type == kube::WatchEventType::kDeleted) {
      book_.remove(*claim);
    } else {
      book_.add(*claim);
    }
  };
  handlers.note = std::move(note);
  informer_ = std::make_unique<kube::Informer>(*watchClient_, std::move(watched), handlers);
  informerThread_ = std::jthread([this] { informer_->run(); });
}

ClusterClaimer::~ClusterClaimer() {
  informer_->stop();
  watchClient_->cancelStreams();
  if (informerThread_.joinable()) informerThread_.join();
}

std::string ClusterClaimer::collection() const { return leasesPath(options_.namespaceName); }

Result<kube::KubeResponse> ClusterClaimer::send(const kube::ApiRequest& request) {
  kube::KubeClient* client = nullptr;
  {
    std::unique_lock lock(clientMutex_);
    clientFree_.wait(lock, [this] { return !idle_.empty(); });
    client = idle_.back();
    idle_.pop_back();
  }
  auto answer = client->send(request);
  {
    std::lock_guard lock(clientMutex_);
    idle_.push_back(client);
  }
  clientFree_.notify_one();
  return answer;
}

Result<std::vector<ClaimedEntry>> ClusterClaimer::claim(
    const std::string& holder, const std::string& pool,
    const std::vector<DynamicPortRequest>& dynamics, const Accept& accept) {
  const auto deadline = std::chrono::steady_clock::now() + options_.syncWait;
  while (!book_.synced()) {
    if (std::chrono::steady_clock::now() >= deadline) {
      ++failures_;
      return fail(ErrorCode::kUnavailable,
                  "the cluster pools' claims are not listed yet (the API server has not answered "
                  "the list of Leases in namespace " +
                      quoteText(options_.namespaceName) + ")");
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  std::vector<ClaimedEntry> entries;
  std::vector<PortClaim> made;  // created by this call: undone on a failure
  for (const auto& entry : dynamics) {
    auto claimed = claimEntry(holder, pool, entry, made);
    if (!claimed) {
      ++failures_;
      undo(made);
      return std::unexpected(std::move(claimed.error()));
    }
    entries.push_back(std::move(*claimed));
  }
  if (auto accepted = accept(entries); !accepted) {
    ++failures_;
    undo(made);
    return std::unexpected(std::move(accepted.error()));
  }
  return entries;
}

Result<ClaimedEntry> ClusterClaimer::claimEntry(const std::string& holder, const std::string& pool,
                                                const DynamicPortRequest& entry,
                                                std::vector<PortClaim>& made) {
  if (const auto first = book_.heldBy(holder, pool, entry.name, entry.count)) {
    ++reclaimed_;
    return ClaimedEntry{entry.name, *first, entry.count};
  }
  uint32_t conflicts = 0;
  while (conflicts <= options_.maxConflicts) {
    const auto first = book_.reserve(pool, entry.count, conflicts > 0);
    if (!first) {
      std::string message = "cluster pool " + quoteText(pool) + " has no ";
      message += entry.count == 1 ? std::string("free port")
                                  : std::to_string(entry.count) + " contiguous free ports";
      for (const auto& count : book_.counts()) {
        if (count.pool == pool) {
          message += " (size " + std::to_string(count.size) + ", " + std::to_string(count.claimed) +
                     " claimed)";
        }
      }
      return fail(ErrorCode::kExhausted, message + " for entry " + quoteText(entry.name));
    }
    // What this block created is deleted again, and its ports are no longer pending.
    const std::size_t before = made.size();
    const auto abandon = [&] {
      undo({made.begin() + static_cast<long>(before), made.end()});
      made.resize(before);
      book_.settle(pool, *first, entry.count, false);
    };
    bool taken = false;
    for (uint32_t offset = 0; offset < entry.count && !taken; ++offset) {
      const PortClaim claim{
          pool, static_cast<uint16_t>(*first + offset), holder, entry.name, *first, entry.count,
          {}};
      const auto created = create(claim);
      if (!created) {
        abandon();
        return std::unexpected(created.error());
      }
      if (*created == Created::kTaken) {
        taken = true;
        book_.settle(pool, claim.port, 1, true);  // another's, until the watch says otherwise
      } else {
        made.push_back(claim);
      }
    }
    if (!taken) {
      book_.settle(pool, *first, entry.count, true);
      return ClaimedEntry{entry.name, *first, entry.count};
    }
    ++conflicts;
    abandon();
  }
  return fail(ErrorCode::kConflict,
              "cluster pool " + quoteText(pool) + ": gave up on entry " + quoteText(entry.name) +
                  " after " + std::to_string(conflicts) + " conflicts with other replicas' claims");
}

Result<ClusterClaimer::Created> ClusterClaimer::create(const PortClaim& claim) {
  const std::string what = "claiming Lease " + options_.namespaceName + "/" + claim.leaseName();
  HOSTPORT_TRY(
      const auto created,
      send({"POST", collection(), std::string(kJson),
            claimLease(claim, options_.namespaceName, std::chrono::system_clock::now()).dump()}));
  if (created.ok()) {
    ++claimed_;
    return Created::kOurs;
  }
  if (created.status != 409) return std::unexpected(kube::answerError(what, created));
  // Someone has it: this holder itself (a review sent again), or another.
  HOSTPORT_TRY(const auto read, send({"GET", collection() + "/" + claim.leaseName(), "", ""}));
  if (read.status == 404) return Created::kTaken;  // released meanwhile: the next candidate
  if (!read.ok()) return std::unexpected(kube::answerError(what, read));
  HOSTPORT_TRY(const json lease, parseLease(read.body, what));
  const auto theirs = readClaimLease(lease);
  if (theirs && theirs->holder == claim.holder && theirs->entry == claim.entry &&
      theirs->first == claim.first && theirs->count == claim.count) {
    return Created::kOurs;
  }
  ++conflicts_;
  return Created::kTaken;
}

void ClusterClaimer::undo(const std::vector<PortClaim>& made) {
  for (const auto& claim : made) {
    const auto deleted = send({"DELETE", collection() + "/" + claim.leaseName(), "", ""});
    if (deleted && (deleted->ok() || deleted->status == 404)) {
      ++undone_;
      book_.remove(claim);
    }
  }
}

void ClusterClaimer::writeMetrics(prometheus::TextWriter& out) const {
  using prometheus::Type;
  out.family("hostport_admission_claims_total", Type::kCounter,
             "Port claim Leases this replica created in cluster pools.");
  out.sample("hostport_admission_claims_total", claimed_.load());
  out.family("hostport_admission_claims_reclaimed_total", Type::kCounter,
             "Entries given back the block their holder (a pod re-created under its name) held.");
  out.sample("hostport_admission_claims_reclaimed_total", reclaimed_.load());
  out.family("hostport_admission_claim_conflicts_total", Type::kCounter,
             "Claim creates refused with 409 because another holder had the port; the next "
             "candidate was tried.");
  out.sample("hostport_admission_claim_conflicts_total", conflicts_.load());
  out.family("hostport_admission_claims_undone_total", Type::kCounter,
             "Claim Leases deleted again because the pod's claim failed as a whole.");
  out.sample("hostport_admission_claims_undone_total", undone_.load());
  out.family("hostport_admission_claim_failures_total", Type::kCounter,
             "Pod claims refused: a pool exhausted, too many conflicts, the API unavailable.");
  out.sample("hostport_admission_claim_failures_total", failures_.load());
  out.family("hostport_admission_cluster_pool_ports", Type::kGauge,
             "Ports of each cluster pool, and how many are claimed as this replica's cache knows.");
  for (const auto& count : book_.counts()) {
    out.sample("hostport_admission_cluster_pool_ports", uint64_t{count.size},
               {{"pool", count.pool}, {"state", "size"}});
    out.sample("hostport_admission_cluster_pool_ports", uint64_t{count.claimed},
               {{"pool", count.pool}, {"state", "claimed"}});
  }
  informer_->writeMetrics(out);
}

}  // namespace hostport::admission
