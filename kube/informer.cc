#include "kube/informer.h"

#include "common/bounded_json.h"
#include "kube/paged_list.h"

namespace hostport::kube {
namespace {

/// A watch that ends sooner than this with no event is resumed only after a backoff.
constexpr auto kShortWatch = std::chrono::seconds(1);

using nlohmann::json;

constexpr std::array<std::string_view, 3> kEventNames = {"ADDED", "MODIFIED", "DELETED"};

}  // namespace

Informer::Informer(KubeClient& client, InformerOptions options, InformerHandlers handlers)
    : client_(client),
      options_(std::move(options)),
      handlers_(std::move(handlers)),
      backoff_(options_.backoff,
               [this] { return std::uniform_real_distribution<double>(0.0, 1.0)(random_); }),
      random_(std::random_device{}()) {}

void Informer::run() {
  int attempt = 0;
  const auto failed = [&](std::string cause) {
    ++failures_;
    const auto delay = backoff_.delay(++attempt);
    tell({InformerNote::Kind::kFailed, resourceVersion(), 0, std::move(cause), delay});
    return pause(delay);
  };
  while (true) {
    {
      std::lock_guard lock(mutex_);
      if (stopped_) return;
    }
    if (resourceVersion().empty()) {
      if (auto listed = list(); !listed) {
        if (!failed(listed.error().message)) return;
        continue;
      }
      attempt = 0;
    }
    std::string cause;
    const auto began = Clock::now();
    switch (watch(cause)) {
      case WatchEnd::kResume:
        tell({InformerNote::Kind::kWatchEnded, resourceVersion(), watchEvents_, cause, {}});
        if (watchEvents_ > 0 || Clock::now() - began >= kShortWatch) {
          attempt = 0;
          break;
        }
        // Ended at once with nothing in it (a server or proxy closing every stream): resumed
        // at once, that would be a hot loop. client-go backs such watches off too.
        if (!pause(backoff_.delay(++attempt))) return;
        break;
      case WatchEnd::kRelist:
        ++relists_;
        tell({InformerNote::Kind::kExpired, resourceVersion(), watchEvents_, cause, {}});
        setVersion({});
        break;
      case WatchEnd::kFailed:
        if (!failed(cause)) return;
        break;
    }
  }
}

void Informer::stop() {
  {
    std::lock_guard lock(mutex_);
    stopped_ = true;
  }
  wake_.notify_all();
  client_.cancelStreams();
}

std::string Informer::resourceVersion() const {
  std::lock_guard lock(mutex_);
  return version_;
}

void Informer::setVersion(std::string version) {
  std::lock_guard lock(mutex_);
  version_ = std::move(version);
}

bool Informer::pause(std::chrono::milliseconds delay) {
  std::unique_lock lock(mutex_);
  return !wake_.wait_for(lock, delay, [this] { return stopped_; });
}

void Informer::tell(InformerNote note) const {
  if (handlers_.note) handlers_.note(note);
}

std::string Informer::target(
    std::initializer_list<std::pair<std::string_view, std::string>> query) const {
  return collectionTarget(options_.collection, query);
}

Result<void> Informer::list() {
  tell({InformerNote::Kind::kListing, {}, 0, {}, {}});
  HOSTPORT_TRY(
      ListedCollection listed,
      listCollection(client_, options_.collection,
                     {options_.fieldSelector, options_.labelSelector, options_.pageSize}, [this] {
                       tell({InformerNote::Kind::kListing, {}, 0, {}, {}});
                     }));
  const std::size_t count = listed.items.size();
  handlers_.replace(std::move(listed.items));
  setVersion(listed.resourceVersion);
  ++lists_;
  lastHeardNanos_ = Clock::now().time_since_epoch().count();
  tell({InformerNote::Kind::kListed, listed.resourceVersion, count, {}, {}});
  return {};
}

Informer::WatchEnd Informer::watch(std::string& cause) {
  watchEvents_ = 0;
  const std::string from = resourceVersion();
  // client-go's spread: [1, 2) times the minimum, so the watches of many nodes end apart.
  const auto timeout = std::chrono::seconds(
      static_cast<int64_t>(static_cast<double>(options_.watchTimeout.count()) *
                           (1.0 + std::uniform_real_distribution<double>(0.0, 1.0)(random_))));
  const ApiRequest request{"GET",
                           target({{"allowWatchBookmarks", "true"},
                                   {"fieldSelector", options_.fieldSelector},
                                   {"labelSelector", options_.labelSelector},
                                   {"resourceVersion", from},
                                   {"timeoutSeconds", std::to_string(timeout.count())},
                                   {"watch", "true"}}),
                           "", ""};
  ++watches_;
  tell({InformerNote::Kind::kWatching, from, 0, {}, {}});
  std::string pending;
  std::optional<WatchEnd> end;
  auto streamed = client_.stream(request, timeout + options_.idleGrace, [&](std::string_view data) {
    pending.append(data);
    std::size_t start = 0;
    for (std::size_t newline; (newline = pending.find('\n', start)) != std::string::npos;
         start = newline + 1) {
      end = onLine(std::string_view(pending).substr(start, newline - start), cause);
      if (end) return false;
    }
    pending.erase(0, start);
    if (pending.size() > options_.maxEventBytes) {
      cause = "a watch event larger than " + std::to_string(options_.maxEventBytes) + " bytes";
      end = WatchEnd::kFailed;
      return false;
    }
    return true;
  });
  if (end) return *end;
  if (!streamed) {
    cause = streamed.error().message;
    return WatchEnd::kFailed;
  }
  if (streamed->status != 200) {
    cause = describeAnswer(streamed->status, streamed->body);
    return streamed->status == 410 ? WatchEnd::kRelist : WatchEnd::kFailed;
  }
  cause = "the server ended it";
  return WatchEnd::kResume;
}

std::optional<Informer::WatchEnd> Informer::onLine(std::string_view line, std::string& cause) {
  if (line.find_first_not_of(" \r\t") == std::string_view::npos) return std::nullopt;
  auto parsed = parseBoundedJson(line, "watch event", options_.maxEventBytes, kMaxObjectDepth);
  if (!parsed || !parsed->is_object() || !(*parsed)["type"].is_string() ||
      !(*parsed)["object"].is_object()) {
    cause = parsed ? "a watch event without type and object" : parsed.error().message;
    return WatchEnd::kFailed;
  }
  const std::string type = (*parsed)["type"].get<std::string>();
  json& object = (*parsed)["object"];
  lastHeardNanos_ = Clock::now().time_since_epoch().count();
  if (type == "ERROR") {
    // A Status: 410 Expired (the version is compacted away) asks for a list; anything else is a
    // failure of this watch.
    const int code =
        object.value("code", json()).is_number_integer() ? object["code"].get<int>() : 0;
    cause = describeAnswer(code, object.dump());
    return code == 410 ? WatchEnd::kRelist : WatchEnd::kFailed;
  }
  std::string version = resourceVersionOf(object);
  if (version.empty()) {
    cause = "a " + type + " event without metadata.resourceVersion";
    return WatchEnd::kFailed;
  }
  if (type == "BOOKMARK") {
    ++bookmarks_;
    setVersion(std::move(version));
    return std::nullopt;
  }
  for (std::size_t i = 0; i < kEventNames.size(); ++i) {
    if (type != kEventNames[i]) continue;
    ++events_[i];
    ++watchEvents_;
    handlers_.apply(static_cast<WatchEventType>(i), std::move(object));
    setVersion(std::move(version));
    return std::nullopt;
  }
  cause = "a watch event of type " + type;
  return WatchEnd::kFailed;
}

void Informer::writeMetrics(prometheus::TextWriter& out) const {
  using prometheus::Type;
  const std::string& collection = options_.collection;
  const prometheus::Labels labels = {{"collection", collection}};
  out.family("hostport_kube_watch_lists_total", Type::kCounter,
             "Lists of the watched collection (the first, and after each 410).");
  out.sample("hostport_kube_watch_lists_total", uint64_t{lists_.load()}, labels);
  out.family("hostport_kube_watch_relists_total", Type::kCounter,
             "Lists because the server no longer had the version watched from (410 Gone).");
  out.sample("hostport_kube_watch_relists_total", uint64_t{relists_.load()}, labels);
  out.family("hostport_kube_watch_streams_total", Type::kCounter,
             "Watch streams opened: one per list, plus one per resume.");
  out.sample("hostport_kube_watch_streams_total", uint64_t{watches_.load()}, labels);
  out.family("hostport_kube_watch_failures_total", Type::kCounter,
             "Lists and watches that failed (no answer, an error status, a bad event).");
  out.sample("hostport_kube_watch_failures_total", uint64_t{failures_.load()}, labels);
  out.family("hostport_kube_watch_events_total", Type::kCounter, "Watch events received.");
  for (std::size_t i = 0; i < kEventNames.size(); ++i) {
    out.sample("hostport_kube_watch_events_total", uint64_t{events_[i].load()},
               {{"collection", collection}, {"type", kEventNames[i]}});
  }
  out.sample("hostport_kube_watch_events_total", uint64_t{bookmarks_.load()},
             {{"collection", collection}, {"type", "BOOKMARK"}});
  const int64_t heard = lastHeardNanos_.load();
  out.family("hostport_kube_watch_silence_seconds", Type::kGauge,
             "Seconds since the server last said anything of the collection (a list, an event, a "
             "bookmark): how far behind the cache may be. -1 before the first list.");
  out.sample("hostport_kube_watch_silence_seconds",
             heard == 0 ? -1.0
                        : std::chrono::duration<double>(Clock::now().time_since_epoch() -
                                                        Clock::duration(heard))
                              .count(),
             labels);
}

}  // namespace hostport::kube
