#pragma once
// The outbox of pod publications (issue 13 §2) and the thread that empties it.
//
// Design note: the lease journal is the durable part of the outbox. Every pod owes the patch
// publicationPatch() makes of its leases; what has been delivered is recorded by digest, per pod
// UID, in <stateDir>/published.json, written atomically a moment after deliveries (not fsynced:
// losing it only repeats patches, which are idempotent). So a publication owed when the agent
// crashes is still owed when it starts again: recover() compares every recovered pod with the
// record. 404 (the pod is gone), 409 (a pod of that name with another UID) and 422 drop a
// publication for good; anything else is tried again later.
//
// One publication per pod (issue 25): the leases of the pod's current sandbox (one per
// interface: the sandbox granted last) or its hostNetwork lease, merged. A grant is sent a
// settleDelay after the pod's last grant, so the interfaces one sandbox setup grants back to back
// go out in one patch; a later one sends the pod's whole publication again, never a part. A
// lease of an older sandbox (its DEL not seen yet) is never published; a released lease is
// forgotten at once, and when it was the current sandbox's last, a remaining older sandbox's
// leases are owed instead.
// The same thread keeps the Node's extended resources (nodeCapacity) as the agent last counted
// them, and sends Warning Events on pods (warn(): best effort, in memory, a bounded queue). It is
// the only one that writes to the API server: ADD never waits for it.

#include <chrono>
#include <condition_variable>
#include <deque>
#include <functional>
#include <map>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "agent/publish/pod_event.h"
#include "common/error.h"
#include "common/prometheus_text.h"
#include "kube/https_transport.h"
#include "lease/lease.h"

namespace hostport::agent::publish {

struct PublisherOptions {
  std::string nodeName;
  std::string stateDir;                           // where published.json lives
  std::chrono::milliseconds retryDelay{30'000};   // after a failure the client gave up on
  std::chrono::milliseconds persistDelay{1'000};  // deliveries recorded together
  std::chrono::milliseconds settleDelay{250};     // a pod's grants published together
};

class Publisher {
 public:
  using Clock = std::chrono::steady_clock;
  /// Sends one request (a pod's merge patch, the Node's, an Event); the HTTP status, or an error
  /// when no answer came.
  using Sender = std::function<Result<int>(const kube::ApiRequest& request)>;

  Publisher(PublisherOptions options, Sender send);
  ~Publisher();  // stops the thread; what is still owed stays owed, for the next start
  Publisher(const Publisher&) = delete;
  Publisher& operator=(const Publisher&) = delete;

  /// Loads the record of deliveries and owes every pod whose patch is not recorded.
  void recover(const std::vector<Lease>& leases);
  void start();
  void stop();

  /// A lease granted (durably): its pod's patch is owed, a settleDelay from now.
  void granted(const Lease& lease);
  /// A lease released (durably): nothing more is sent for it.
  void released(const Lease& lease);
  /// The pools' capacities as last counted (pool_capacity.h): patched on the Node's status when
  /// they differ from what was delivered last, or with `resend` (the slow backstop: someone may
  /// have edited the Node), tried again after a failure.
  void nodeCapacity(std::map<std::string, uint64_t> capacities, bool resend = false);
  /// A Warning Event on a pod: sent once, after a failure tried again up to kEventAttempts times
  /// in all; at most kMaxQueuedEvents wait, the oldest dropped beyond. The caller says each thing
  /// once: nothing here tells a repeat.
  void warn(PodWarning warning);

  /// Waits until `until` unless stopped first; false when stopped. The API client waits with it,
  /// so a stop cuts its backoff short.
  bool waitUntil(Clock::time_point until);

  struct Counts {
    std::size_t pending = 0;
    uint64_t delivered = 0;
    uint64_t capacityPatches = 0;             // Node status patches the API server accepted
    std::map<std::string, uint64_t> dropped;  // by reason: not_found, uid_mismatch, invalid
    std::map<std::string, uint64_t> failed;   // by reason: unavailable, status_<code>
    std::map<std::string, uint64_t> events;   // Warning Events by outcome: sent, failed, dropped
  };
  Counts counts() const;
  void writeMetrics(prometheus::TextWriter& out) const;

 private:
  struct Owed {
    PodIdentity pod;
    std::string patch;
    std::string digest;
    Clock::time_point notBefore;
  };
  struct QueuedEvent {
    PodWarning warning;
    Clock::time_point notBefore;
    int attempts = 0;
  };
  /// What the publisher knows of one pod's leases.
  struct PodLeases {
    std::map<AttachmentKey, Lease> leases;
    std::string sandbox;  // the container ID of the current sandbox: the one granted last
  };

  void run();
  void deliver(const std::string& uid, Owed owed);
  void deliverCapacity(std::map<std::string, uint64_t> capacities);
  void deliverEvent(QueuedEvent event);
  /// The patch of `pod`'s current sandbox.
  std::string patchOf(const PodLeases& pod) const;
  /// Owes `uid`'s patch from `notBefore` (a later retry time already set stays), or nothing when
  /// it has none.
  void oweLocked(const std::string& uid, const PodLeases& pod, Clock::time_point notBefore);
  /// The record changed: it is written a persistDelay after the first unwritten change.
  void markDirtyLocked();
  /// `owed` is owed no more (delivered, or moot): recorded as published by `digest`.
  void settleLocked(std::map<std::string, Owed>::iterator owed, const std::string& digest);
  /// Writes published.json from a copy taken under `lock`, which is released meanwhile.
  void persist(std::unique_lock<std::mutex>& lock);

  PublisherOptions options_;
  Sender send_;
  mutable std::mutex mutex_;
  std::condition_variable wake_;
  bool stopping_ = false;
  std::map<std::string, PodLeases> pods_;         // by pod UID
  std::map<std::string, Owed> owed_;              // by pod UID
  std::map<std::string, std::string> published_;  // pod UID -> digest of the delivered patch
  std::optional<std::map<std::string, uint64_t>> wantedCapacity_;
  std::optional<std::map<std::string, uint64_t>> deliveredCapacity_;
  Clock::time_point capacityNotBefore_{};
  std::deque<QueuedEvent> events_;  // in the order said; a retry goes to the back
  bool dirty_ = false;
  Clock::time_point dirtySince_{};
  Counts counts_;
  std::thread thread_;
};

inline constexpr std::size_t kMaxQueuedEvents = 256;
inline constexpr int kEventAttempts = 3;

/// A short stable digest of a patch (FNV-1a 64, hex): equal patches are equal deliveries.
std::string patchDigest(const std::string& patch);

}  // namespace hostport::agent::publish
