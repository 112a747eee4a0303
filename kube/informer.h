#pragma once
// An informer, as client-go's reflector runs one: list a collection, then watch it from the
// list's resourceVersion, keep the version of the last event or bookmark, resume a dropped watch
// from there, and list again only when the server says that version is gone (410). The objects go
// to the owner's handlers, which keep the cache (only what they use); the informer keeps none.
//
// - A list is paged (limit, continue); a continue token the server has expired restarts it.
// - A watch asks for bookmarks (allowWatchBookmarks) and for an end after [1, 2) times
//   watchTimeout (client-go's spread), so watches of many nodes do not end together; a stream
//   silent for longer than its timeout plus idleGrace is dead and dropped.
// - Failures (no answer, 429, 5xx, 403 while RBAC is being applied) wait with backoff, reset by
//   the next success. What happens is told to `note` (the agent logs it as kube.watch_* events)
//   and counted for /metrics.
// Blocking: run() on a thread of its own, with a KubeClient of its own (a watch holds its
// connection); stop() from any thread.

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <functional>
#include <mutex>
#include <nlohmann/json.hpp>
#include <random>
#include <string>
#include <vector>

#include "common/prometheus_text.h"
#include "kube/backoff.h"
#include "kube/kube_client.h"

namespace hostport::kube {

enum class WatchEventType { kAdded, kModified, kDeleted };

/// Something the informer did, for the owner's log.
struct InformerNote {
  enum class Kind {
    kListing,     // a list starts: it brings the collection as of now or later
    kListed,      // a list ended: `count` objects at `resourceVersion`
    kWatching,    // a watch started from `resourceVersion`
    kWatchEnded,  // a watch ended (`cause`), after `count` events; it resumes where it was
    kExpired,     // the server no longer has `resourceVersion` (410): a list follows
    kFailed,      // a list or watch failed (`cause`); the next try comes after `retryIn`
  };
  Kind kind = Kind::kListed;
  std::string resourceVersion;
  std::size_t count = 0;
  std::string cause;
  std::chrono::milliseconds retryIn{0};
};

struct InformerOptions {
  std::string collection;     // "/api/v1/pods"
  std::string fieldSelector;  // "spec.nodeName=node-a"; "" for every object
  std::string labelSelector;  // "hostport.io/pool"; "" for every object
  std::size_t pageSize = 500;
  std::chrono::seconds watchTimeout{300};  // client-go's minimum watch timeout
  std::chrono::seconds idleGrace{30};
  std::size_t maxEventBytes = 4 << 20;  // an object is at most etcd's 1.5 MiB
  BackoffPolicy backoff{std::chrono::milliseconds(800), std::chrono::seconds(30), 2.0};
};

struct InformerHandlers {
  /// Every object of a list, which replaces all the owner knew: an object not in it is gone.
  std::function<void(std::vector<nlohmann::json> items)> replace;
  /// One watch event, its object as the server sent it (for DELETED, its last state).
  std::function<void(WatchEventType type, nlohmann::json object)> apply;
  /// Optional.
  std::function<void(const InformerNote&)> note;
};

class Informer {
 public:
  Informer(KubeClient& client, InformerOptions options, InformerHandlers handlers);

  /// Lists and watches until stop(). The handlers run on this thread.
  void run();
  /// Ends run() soon (a stream in progress is cancelled), from any thread.
  void stop();

  /// The version the next watch starts from; "" before the first list and after a 410.
  std::string resourceVersion() const;
  /// The informer's figures, labelled with its collection.
  void writeMetrics(prometheus::TextWriter& out) const;

 private:
  using Clock = std::chrono::steady_clock;
  enum class WatchEnd { kResume, kRelist, kFailed };

  /// One paged list; replaces the owner's view and sets the version. An error says why.
  Result<void> list();
  /// One watch from the current version, until it ends.
  WatchEnd watch(std::string& cause);
  /// One line of a watch: an event applied, a bookmark's version kept, or the end it asks for.
  std::optional<WatchEnd> onLine(std::string_view line, std::string& cause);
  std::string target(std::initializer_list<std::pair<std::string_view, std::string>> query) const;
  /// Sleeps `delay`, or less when stopped; false when stopped.
  bool pause(std::chrono::milliseconds delay);
  void tell(InformerNote note) const;
  void setVersion(std::string version);

  KubeClient& client_;
  InformerOptions options_;
  InformerHandlers handlers_;
  Backoff backoff_;
  std::mt19937_64 random_;

  mutable std::mutex mutex_;  // guards stopped_ and version_
  std::condition_variable wake_;
  bool stopped_ = false;
  std::string version_;

  std::size_t watchEvents_ = 0;  // of the watch in progress
  std::atomic<uint64_t> lists_{0};
  std::atomic<uint64_t> relists_{0};  // lists after a 410
  std::atomic<uint64_t> watches_{0};
  std::atomic<uint64_t> failures_{0};
  std::atomic<uint64_t> bookmarks_{0};
  std::array<std::atomic<uint64_t>, 3> events_{};
  std::atomic<int64_t> lastHeardNanos_{0};  // steady clock: the last list, event or bookmark
};

}  // namespace hostport::kube
