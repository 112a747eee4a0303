#include "agent/daemon/deleted_pod_leases.h"

#include <algorithm>

#include "agent/log/event_log.h"
#include "agent/service/netns_id.h"

namespace hostport::agent::daemon {
namespace {

using log::Component;
using log::Level;

/// Passes are at least this far apart: a storm of deletions is judged in batches.
constexpr auto kMinPassGap = std::chrono::seconds(1);

std::string_view livenessName(service::NetnsLiveness liveness) {
  switch (liveness) {
    case service::NetnsLiveness::kAlive:
      return "alive";
    case service::NetnsLiveness::kGone:
      return "gone";
    case service::NetnsLiveness::kUnknown:
      break;
  }
  return "unknown";
}

}  // namespace

DeletedPodLeases::DeletedPodLeases(service::AgentService& service, pods::NodePods& pods,
                                   std::chrono::milliseconds grace)
    : service_(service), pods_(pods), grace_(grace) {
  pods_.listen([this](const pods::PodChange& change) {
    if (!change.before || change.after) return;
    {
      std::lock_guard lock(mutex_);
      leftView_.insert(change.before->sandboxUid());
      woken_ = true;
      ++wakes_;
    }
    wake_.notify_all();
  });
  pods_.listenToLists([this] {
    {
      std::lock_guard lock(mutex_);
      woken_ = true;
      ++wakes_;
    }
    wake_.notify_all();
  });
}

DeletedPodLeases::~DeletedPodLeases() { stop(); }

void DeletedPodLeases::stop() {
  if (!thread_.joinable()) return;
  thread_.request_stop();
  wake_.notify_all();
  thread_.join();
}

void DeletedPodLeases::start() {
  thread_ = std::jthread([this](std::stop_token stop) { run(std::move(stop)); });
}

void DeletedPodLeases::granted(const Lease& lease) {
  std::lock_guard lock(mutex_);
  grantedAt_.insert_or_assign(lease.key, Clock::now());
}

void DeletedPodLeases::released(const Lease& lease) {
  std::lock_guard lock(mutex_);
  grantedAt_.erase(lease.key);
  deletedSince_.erase(lease.key);
}

std::optional<std::string_view> DeletedPodLeases::deletedBecause(const Lease& lease) const {
  const std::string& uid = lease.pod.uid;
  if (uid.empty() || !lease.key.hostNetworkPodUid().empty()) return std::nullopt;
  if (pods_.hasSandboxUid(uid)) return std::nullopt;
  if (leftView_.contains(uid)) return "left_view";
  const auto listed = pods_.listedFrom();
  if (!listed) return std::nullopt;
  const auto granted = grantedAt_.find(lease.key);
  if (granted == grantedAt_.end() || *listed > granted->second) return "not_listed";
  return std::nullopt;
}

void DeletedPodLeases::pass(Clock::time_point now) {
  const std::vector<Lease> leases = service_.list("", "");
  std::vector<std::pair<const Lease*, std::string_view>> due;
  {
    std::lock_guard lock(mutex_);
    std::map<AttachmentKey, Clock::time_point> deleted;
    std::set<std::string_view> held;
    for (const Lease& lease : leases) {
      held.insert(lease.pod.uid);
      const auto why = deletedBecause(lease);
      if (!why) continue;
      const auto seen = deletedSince_.find(lease.key);
      const auto since = seen == deletedSince_.end() ? now : seen->second;
      if (now - since >= grace_) {
        due.emplace_back(&lease, *why);
      } else {
        deleted.emplace(lease.key, since);
      }
    }
    deletedSince_ = std::move(deleted);
    std::erase_if(leftView_, [&](const std::string& uid) { return !held.contains(uid); });
  }
  if (due.empty()) return;
  std::vector<AttachmentKey> keys;
  for (const auto& [lease, why] : due) {
    log::event(Component::kAlloc, Level::kInfo, "alloc.pod_deleted",
               {{"key", lease->key.str()},
                {"pod", lease->pod.namespaceName + "/" + lease->pod.name},
                {"uid", lease->pod.uid},
                {"api", why},
                {"netns", livenessName(service::netnsLiveness(service::sandboxOf(*lease)))}});
    keys.push_back(lease->key);
  }
  service_.releaseKeys(std::move(keys), service::AgentService::ReleaseVia::kPodGone,
                       [](Result<std::vector<Lease>> released) {
                         if (!released) {
                           log::event(Component::kAlloc, Level::kError,
                                      "alloc.pod_deleted_release_failed",
                                      {{"cause", released.error().message}});
                         }
                       });
}

void DeletedPodLeases::run(std::stop_token stop) {
  std::unique_lock lock(mutex_);
  Clock::time_point lastPass{};
  while (!stop.stop_requested()) {
    // Due: now when woken, else when the first grace running ends; never sooner than a gap
    // after the last pass.
    std::optional<Clock::time_point> due;
    if (woken_) due = Clock::now();
    for (const auto& [key, since] : deletedSince_) {
      due = std::min(due.value_or(Clock::time_point::max()), since + grace_);
    }
    if (due) due = std::max(*due, lastPass + kMinPassGap);
    if (!due || *due > Clock::now()) {
      const uint64_t seen = wakes_;
      const auto changed = [&] { return wakes_ != seen; };
      if (due) {
        wake_.wait_until(lock, stop, *due, changed);
      } else {
        wake_.wait(lock, stop, changed);
      }
      continue;
    }
    woken_ = false;
    lock.unlock();
    lastPass = Clock::now();
    pass(lastPass);
    lock.lock();
  }
}

}  // namespace hostport::agent::daemon
