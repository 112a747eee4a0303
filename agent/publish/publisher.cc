#include "agent/publish/publisher.h"

#include <algorithm>
#include <cstdio>
#include <nlohmann/json.hpp>
#include <set>

#include "agent/log/event_log.h"
#include "agent/publish/pod_publication.h"
#include "annotations/annotation_names.h"
#include "common/atomic_file.h"

namespace hostport::agent::publish {
namespace {

using log::Component;
using log::Level;

constexpr std::string_view kPublishedFile = "published.json";
constexpr std::size_t kMaxPublishedBytes = 64 << 20;
/// 2: digests by pod UID (1 had them by lease key).
constexpr int kRecordVersion = 2;

/// Why a status ends a publication for good; empty when it is worth trying again.
std::string dropReason(int status) {
  switch (status) {
    case 404:
      return "not_found";  // the pod is gone
    case 409:
      return "uid_mismatch";  // a pod of that name, but another UID: not ours to patch
    case 422:
      return "invalid";
    default:
      return {};
  }
}

/// The record's "version"; 0 when it has none (or is no record at all).
int recordVersion(const nlohmann::json& document) {
  if (!document.is_object() || !document.contains("version")) return 0;
  const auto& version = document["version"];
  return version.is_number_integer() ? version.get<int>() : 0;
}

}  // namespace

std::string patchDigest(const std::string& patch) {
  uint64_t hash = 0xcbf29ce484222325ull;
  for (const char c : patch) {
    hash ^= static_cast<unsigned char>(c);
    hash *= 0x100000001b3ull;
  }
  char text[17];
  std::snprintf(text, sizeof text, "%016llx", static_cast<unsigned long long>(hash));
  return text;
}

Publisher::Publisher(PublisherOptions options, Sender send)
    : options_(std::move(options)), send_(std::move(send)) {}

Publisher::~Publisher() { stop(); }

void Publisher::recover(const std::vector<Lease>& leases) {
  std::lock_guard lock(mutex_);
  auto text =
      readSmallFile(std::filesystem::path(options_.stateDir) / kPublishedFile, kMaxPublishedBytes);
  if (text && *text) {
    const auto document = nlohmann::json::parse(**text, nullptr, false);
    if (recordVersion(document) == kRecordVersion && document.contains("published") &&
        document["published"].is_object()) {
      for (const auto& [uid, digest] : document["published"].items()) {
        if (digest.is_string()) published_[uid] = digest.get<std::string>();
      }
    } else {
      // Version 1 recorded leases, not pods: its pods are published once more, harmlessly.
      const bool older = recordVersion(document) > 0 && recordVersion(document) < kRecordVersion;
      log::event(
          Component::kKube, older ? Level::kInfo : Level::kWarn,
          older ? "publish.record_older" : "publish.record_unreadable",
          {{"file", std::string(kPublishedFile)}, {"effect", "every pod is published again"}});
    }
  }
  for (const Lease& lease : leases) {
    if (!lease.pod.uid.empty()) pods_[lease.pod.uid].leases[lease.key] = lease;
  }
  std::map<std::string, std::string> kept;
  const auto now = Clock::now();
  for (auto& [uid, pod] : pods_) {
    // Which sandbox is current is not journaled. With one, it is that one; with more (a DEL the
    // agent did not see), the one the record says was published, else none until releases
    // leave one.
    std::set<std::string> sandboxes;
    for (const auto& [key, lease] : pod.leases) sandboxes.insert(key.containerId);
    const auto recorded = published_.find(uid);
    for (const std::string& sandbox : sandboxes) {
      pod.sandbox = sandbox;
      if (recorded != published_.end() && patchDigest(patchOf(pod)) == recorded->second) break;
      pod.sandbox.clear();
    }
    if (pod.sandbox.empty() && sandboxes.size() == 1) pod.sandbox = *sandboxes.begin();
    if (pod.sandbox.empty()) continue;
    if (recorded != published_.end() && patchDigest(patchOf(pod)) == recorded->second) {
      kept.insert(*recorded);
    }
  }
  // Records of pods whose leases were all released while the agent was down go with them.
  dirty_ = kept.size() != published_.size();
  dirtySince_ = now;
  published_ = std::move(kept);
  for (const auto& [uid, pod] : pods_) oweLocked(uid, pod, now);
  counts_.pending = owed_.size();
}

void Publisher::start() {
  std::lock_guard lock(mutex_);
  if (thread_.joinable()) return;
  stopping_ = false;
  thread_ = std::thread([this] { run(); });
}

void Publisher::stop() {
  {
    std::lock_guard lock(mutex_);
    stopping_ = true;
  }
  wake_.notify_all();
  if (thread_.joinable()) thread_.join();
  std::unique_lock lock(mutex_);
  if (dirty_) persist(lock);
}

void Publisher::granted(const Lease& lease) {
  if (lease.pod.uid.empty()) return;  // no UID to aim at: nothing is ever published for it
  {
    std::lock_guard lock(mutex_);
    PodLeases& pod = pods_[lease.pod.uid];
    pod.leases[lease.key] = lease;
    pod.sandbox = lease.key.containerId;
    oweLocked(lease.pod.uid, pod, Clock::now() + options_.settleDelay);
  }
  wake_.notify_all();
}

void Publisher::released(const Lease& lease) {
  {
    std::lock_guard lock(mutex_);
    const auto pod = pods_.find(lease.pod.uid);
    if (pod == pods_.end()) return;
    pod->second.leases.erase(lease.key);
    if (pod->second.leases.empty()) {
      owed_.erase(pod->first);
      if (published_.erase(pod->first) > 0) markDirtyLocked();
      pods_.erase(pod);
    } else if (pod->second.sandbox.empty()) {
      // Undecided since recovery: decided once the releases leave one sandbox.
      const std::string& first = pod->second.leases.begin()->first.containerId;
      if (std::ranges::all_of(pod->second.leases,
                              [&](const auto& held) { return held.first.containerId == first; })) {
        pod->second.sandbox = first;
        oweLocked(pod->first, pod->second, Clock::now());
      }
    } else if (owed_.contains(pod->first)) {
      // Not sent yet: what is sent must not hold the released interface's ports.
      oweLocked(pod->first, pod->second, Clock::now());
    }
    counts_.pending = owed_.size();
  }
  wake_.notify_all();  // the record is written a persistDelay from now, not an hour
}

void Publisher::nodeCapacity(std::map<std::string, uint64_t> capacities, bool resend) {
  if (options_.nodeName.empty()) return;
  {
    std::lock_guard lock(mutex_);
    if (resend) deliveredCapacity_.reset();
    if (wantedCapacity_ == capacities && !resend) return;
    // capacityNotBefore_ stays: a change does not cut short the wait after a failure.
    wantedCapacity_ = std::move(capacities);
  }
  wake_.notify_all();
}

void Publisher::warn(PodWarning warning) {
  {
    std::lock_guard lock(mutex_);
    if (events_.size() >= kMaxQueuedEvents) {
      ++counts_.events["dropped"];
      log::event(Component::kKube, Level::kWarn, "publish.event_dropped",
                 {{"pod", events_.front().warning.pod.namespaceName + "/" +
                              events_.front().warning.pod.name},
                  {"reason", events_.front().warning.reason},
                  {"cause", "queue_full"}});
      events_.pop_front();
    }
    events_.push_back({std::move(warning), Clock::now(), 0});
  }
  wake_.notify_all();
}

bool Publisher::waitUntil(Clock::time_point until) {
  std::unique_lock lock(mutex_);
  wake_.wait_until(lock, until, [&] { return stopping_; });
  return !stopping_;
}

void Publisher::run() {
  std::unique_lock lock(mutex_);
  while (!stopping_) {
    const auto now = Clock::now();
    if (dirty_ && (now - dirtySince_ >= options_.persistDelay || owed_.empty())) {
      persist(lock);
      continue;
    }
    if (wantedCapacity_ && wantedCapacity_ != deliveredCapacity_ && capacityNotBefore_ <= now) {
      auto capacities = *wantedCapacity_;
      lock.unlock();
      deliverCapacity(std::move(capacities));
      lock.lock();
      continue;
    }
    if (!events_.empty() && events_.front().notBefore <= now) {
      QueuedEvent event = std::move(events_.front());
      events_.pop_front();
      lock.unlock();
      deliverEvent(std::move(event));
      lock.lock();
      continue;
    }
    auto next = owed_.end();
    for (auto it = owed_.begin(); it != owed_.end(); ++it) {
      if (next == owed_.end() || it->second.notBefore < next->second.notBefore) next = it;
    }
    if (next == owed_.end() || next->second.notBefore > now) {
      auto until = next == owed_.end() ? now + std::chrono::hours(1) : next->second.notBefore;
      if (dirty_) until = std::min(until, dirtySince_ + options_.persistDelay);
      if (wantedCapacity_ && wantedCapacity_ != deliveredCapacity_) {
        until = std::min(until, capacityNotBefore_);
      }
      if (!events_.empty()) until = std::min(until, events_.front().notBefore);
      wake_.wait_until(lock, until);
      continue;
    }
    const std::string uid = next->first;
    Owed owed = next->second;
    lock.unlock();
    deliver(uid, std::move(owed));
    lock.lock();
  }
}

void Publisher::deliver(const std::string& uid, Owed owed) {
  auto sent = send_({"PATCH", podPath(owed.pod), "application/merge-patch+json", owed.patch});
  std::lock_guard lock(mutex_);
  const auto current = owed_.find(uid);
  // Released, or granted again with other ports, while the patch was in flight: the newer state
  // decides what is owed.
  const bool stillOwed = current != owed_.end() && current->second.digest == owed.digest;
  const std::string pod = owed.pod.namespaceName + "/" + owed.pod.name;
  if (sent && *sent >= 200 && *sent < 300) {
    ++counts_.delivered;
    if (stillOwed) settleLocked(current, owed.digest);
    log::event(Component::kKube, Level::kInfo, "publish.done", {{"pod", pod}, {"uid", uid}});
  } else if (const std::string drop = sent ? dropReason(*sent) : std::string(); !drop.empty()) {
    ++counts_.dropped[drop];
    if (stillOwed) settleLocked(current, owed.digest);  // moot: not owed after a restart either
    log::event(
        Component::kKube, Level::kWarn, "publish.dropped",
        {{"pod", pod}, {"uid", uid}, {"reason", drop}, {"status", static_cast<int64_t>(*sent)}});
  } else {
    const std::string reason = sent ? "status_" + std::to_string(*sent) : "unavailable";
    ++counts_.failed[reason];
    if (stillOwed) current->second.notBefore = Clock::now() + options_.retryDelay;
    log::event(Component::kKube, Level::kWarn, "publish.failed",
               {{"pod", pod},
                {"uid", uid},
                {"reason", reason},
                {"cause", sent ? std::string() : sent.error().message},
                {"retry_ms", static_cast<int64_t>(options_.retryDelay.count())}});
  }
  counts_.pending = owed_.size();
}

void Publisher::deliverCapacity(std::map<std::string, uint64_t> capacities) {
  auto sent = send_({"PATCH", nodeStatusPath(options_.nodeName), "application/merge-patch+json",
                     nodeCapacityPatch(capacities)});
  std::lock_guard lock(mutex_);
  if (sent && *sent >= 200 && *sent < 300) {
    ++counts_.capacityPatches;
    deliveredCapacity_ = std::move(capacities);
    std::string resources;
    for (const auto& [pool, free] : *deliveredCapacity_) {
      resources += (resources.empty() ? "" : ",") + std::string(annotations::kResourcePrefix) +
                   pool + "=" + std::to_string(free);
    }
    log::event(Component::kKube, Level::kInfo, "capacity.patched",
               {{"node", options_.nodeName}, {"resources", resources}});
    return;
  }
  const std::string reason = sent ? "status_" + std::to_string(*sent) : "unavailable";
  ++counts_.failed["capacity_" + reason];
  capacityNotBefore_ = Clock::now() + options_.retryDelay;
  log::event(Component::kKube, Level::kWarn, "capacity.failed",
             {{"node", options_.nodeName},
              {"reason", reason},
              {"cause", sent ? std::string() : sent.error().message},
              {"retry_ms", static_cast<int64_t>(options_.retryDelay.count())}});
}

void Publisher::deliverEvent(QueuedEvent event) {
  const PodWarning& warning = event.warning;
  const std::string body =
      podEvent(warning, options_.nodeName, std::chrono::system_clock::now()).dump();
  auto sent = send_({"POST", eventsPath(warning.pod.namespaceName), "application/json", body});
  const std::string pod = warning.pod.namespaceName + "/" + warning.pod.name;
  std::lock_guard lock(mutex_);
  if (sent && *sent >= 200 && *sent < 300) {
    ++counts_.events["sent"];
    log::event(Component::kKube, Level::kInfo, "publish.event_sent",
               {{"pod", pod}, {"reason", warning.reason}});
    return;
  }
  const std::string cause = sent ? "status_" + std::to_string(*sent) : sent.error().message;
  // A 4xx other than 429 (which the client already waited out) will not change: a namespace
  // being deleted refuses events (403), a bad one is 422.
  const bool final = (sent && *sent >= 400 && *sent < 500) || ++event.attempts >= kEventAttempts;
  if (final) {
    ++counts_.events["failed"];
    log::event(Component::kKube, Level::kWarn, "publish.event_failed",
               {{"pod", pod}, {"reason", warning.reason}, {"cause", cause}});
    return;
  }
  event.notBefore = Clock::now() + options_.retryDelay;
  events_.push_back(std::move(event));
}

void Publisher::markDirtyLocked() {
  if (!dirty_) dirtySince_ = Clock::now();
  dirty_ = true;
}

std::string Publisher::patchOf(const PodLeases& pod) const {
  std::vector<Lease> current;
  for (const auto& [key, lease] : pod.leases) {
    if (key.containerId == pod.sandbox) current.push_back(lease);
  }
  return publicationPatch(current, options_.nodeName);
}

void Publisher::oweLocked(const std::string& uid, const PodLeases& pod,
                          Clock::time_point notBefore) {
  const std::string patch = patchOf(pod);
  const auto owed = owed_.find(uid);
  if (patch.empty()) {
    if (owed != owed_.end()) owed_.erase(owed);
  } else if (const std::string digest = patchDigest(patch); owed != owed_.end()) {
    owed->second.patch = patch;
    owed->second.digest = digest;
    owed->second.notBefore = std::max(owed->second.notBefore, notBefore);
  } else if (const auto published = published_.find(uid);
             published == published_.end() || published->second != digest) {
    const PodIdentity identity = pod.leases.begin()->second.pod;
    owed_.emplace(uid, Owed{identity, patch, digest, notBefore});
  }
  counts_.pending = owed_.size();
}

void Publisher::settleLocked(std::map<std::string, Owed>::iterator owed,
                             const std::string& digest) {
  published_[owed->first] = digest;
  owed_.erase(owed);
  markDirtyLocked();
}

void Publisher::persist(std::unique_lock<std::mutex>& lock) {
  nlohmann::json published = nlohmann::json::object();
  for (const auto& [uid, digest] : published_) published[uid] = digest;
  dirty_ = false;
  lock.unlock();
  // Written without the lock: the store's thread calls granted() and released(), and must not
  // wait on this disk write.
  const std::string text =
      nlohmann::json{{"version", kRecordVersion}, {"published", published}}.dump();
  if (auto written =
          writeFileAtomically(options_.stateDir, kPublishedFile, text, Durability::kCache);
      !written) {
    log::event(Component::kKube, Level::kWarn, "publish.record_failed",
               {{"cause", written.error().message}});
  }
  lock.lock();
}

Publisher::Counts Publisher::counts() const {
  std::lock_guard lock(mutex_);
  return counts_;
}

void Publisher::writeMetrics(prometheus::TextWriter& out) const {
  using prometheus::Type;
  const Counts now = counts();
  out.family("hostport_publications_pending", Type::kGauge,
             "Pod publications owed to the API server.");
  out.sample("hostport_publications_pending", uint64_t{now.pending});
  out.family("hostport_publications_done_total", Type::kCounter,
             "Pod publications the API server accepted.");
  out.sample("hostport_publications_done_total", now.delivered);
  out.family("hostport_publications_dropped_total", Type::kCounter,
             "Pod publications given up for good, by reason.");
  for (const auto& [reason, count] : now.dropped) {
    out.sample("hostport_publications_dropped_total", count, {{"reason", reason}});
  }
  out.family("hostport_publications_failed_total", Type::kCounter,
             "Failed attempts, to be tried again, by reason.");
  for (const auto& [reason, count] : now.failed) {
    out.sample("hostport_publications_failed_total", count, {{"reason", reason}});
  }
  out.family("hostport_pod_events_total", Type::kCounter,
             "Warning Events on pods, by outcome: sent, failed (given up), dropped (queue full).");
  for (const auto& [outcome, count] : now.events) {
    out.sample("hostport_pod_events_total", count, {{"outcome", outcome}});
  }
}

}  // namespace hostport::agent::publish
