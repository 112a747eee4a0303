#include "agent/daemon/pod_watch.h"

#include "agent/log/event_log.h"

namespace hostport::agent::daemon {
namespace {

/// Each informer note as a kube.watch_* event: a list and an expiry at info, a failure as a
/// warning, a watch that starts or ends (every few minutes, by design) at debug.
void logNote(const kube::InformerNote& note) {
  using Kind = kube::InformerNote::Kind;
  namespace l = log;
  switch (note.kind) {
    case Kind::kListing:
      break;  // its end is told
    case Kind::kListed:
      l::event(l::Component::kKube, l::Level::kInfo, "kube.watch_listed",
               {{"pods", note.count}, {"version", note.resourceVersion}});
      break;
    case Kind::kWatching:
      l::event(l::Component::kKube, l::Level::kDebug, "kube.watch_started",
               {{"version", note.resourceVersion}});
      break;
    case Kind::kWatchEnded:
      l::event(l::Component::kKube, l::Level::kDebug, "kube.watch_ended",
               {{"events", note.count}, {"version", note.resourceVersion}, {"cause", note.cause}});
      break;
    case Kind::kExpired:
      l::event(l::Component::kKube, l::Level::kInfo, "kube.watch_expired",
               {{"version", note.resourceVersion}, {"cause", note.cause}});
      break;
    case Kind::kFailed:
      l::event(l::Component::kKube, l::Level::kWarn, "kube.watch_failed",
               {{"version", note.resourceVersion},
                {"cause", note.cause},
                {"retry_ms", static_cast<int64_t>(note.retryIn.count())}});
      break;
  }
}

}  // namespace

Result<std::unique_ptr<PodWatch>> PodWatch::create(const kube::ClusterConfig& cluster,
                                                   const std::string& node,
                                                   const config::AgentConfig& config,
                                                   service::Metrics& metrics) {
  std::unique_ptr<PodWatch> watch(new PodWatch());
  watch->node_ = node;
  const auto clientOptions = kube::KubeClientOptions::paced(config.apiQps, config.apiBurst);
  HOSTPORT_TRY(watch->client_,
               kube::KubeClient::create(cluster, clientOptions, [raw = watch.get()](auto until) {
                 return raw->waitUntil(until);
               }));
  kube::InformerOptions options;
  options.collection = "/api/v1/pods";
  options.fieldSelector = "spec.nodeName=" + node;
  pods::NodePods& cache = watch->pods_;
  watch->informer_ = std::make_unique<kube::Informer>(
      *watch->client_, std::move(options),
      kube::InformerHandlers{[&cache](std::vector<nlohmann::json> items) { cache.replace(items); },
                             [&cache](kube::WatchEventType type, nlohmann::json pod) {
                               if (type == kube::WatchEventType::kDeleted) {
                                 cache.remove(pod);
                               } else {
                                 cache.upsert(pod);
                               }
                             },
                             [&cache](const kube::InformerNote& note) {
                               if (note.kind == kube::InformerNote::Kind::kListing) cache.listing();
                               logNote(note);
                             }});
  metrics.addSource([raw = watch.get()](prometheus::TextWriter& out) {
    raw->informer_->writeMetrics(out);
    out.family("hostport_node_pods", prometheus::Type::kGauge,
               "Pods of this node the watch knows (0 before its first list).");
    out.sample("hostport_node_pods", uint64_t{raw->pods_.size()});
    out.family("hostport_node_pods_unreadable_total", prometheus::Type::kCounter,
               "Pod objects the watch delivered without a uid, namespace or name, ignored.");
    out.sample("hostport_node_pods_unreadable_total", raw->pods_.unreadable());
  });
  return watch;
}

void PodWatch::start() {
  thread_ = std::jthread([this] { informer_->run(); });
  log::event(log::Component::kKube, log::Level::kInfo, "kube.watch_on",
             {{"node", node_}, {"selector", "spec.nodeName=" + node_}});
}

void PodWatch::stop() {
  {
    std::lock_guard lock(mutex_);
    stopping_ = true;
  }
  wake_.notify_all();
  if (informer_) informer_->stop();
  if (thread_.joinable()) thread_.join();
}

PodWatch::~PodWatch() { stop(); }

bool PodWatch::waitUntil(std::chrono::steady_clock::time_point until) {
  std::unique_lock lock(mutex_);
  return !wake_.wait_until(lock, until, [this] { return stopping_; });
}

}  // namespace hostport::agent::daemon
