#include "agent/daemon/host_network_pods.h"

#include <future>
#include <memory>

#include "agent/log/event_log.h"
#include "annotations/port_annotations.h"

namespace hostport::agent::daemon {
namespace {

using log::Component;
using log::Level;

}  // namespace

bool wantsHostPorts(const pods::NodePod& pod) {
  const auto ports = pod.annotations.find(annotations::kPortsAnnotation);
  return pod.hostNetwork && ports != pod.annotations.end() && !ports->second.empty() &&
         !pod.finished() && !pod.deleting;
}

HostNetworkPods::HostNetworkPods(service::AgentService& service, pods::NodePods& pods,
                                 publish::Publisher& publisher,
                                 const std::vector<core::PoolSpec>& pools)
    : service_(service), pods_(pods), publisher_(publisher) {
  for (const auto& pool : pools) {
    if (pool.scope == core::PoolScope::kCluster) clusterPools_.insert(pool.name);
  }
  pods_.listen([this](const pods::PodChange& change) { onChange(change); });
  pods_.listenToLists([this] { sweep(); });
}

void HostNetworkPods::onChange(const pods::PodChange& change) {
  const bool wanted = change.before && wantsHostPorts(*change.before);
  const bool wants = change.after && wantsHostPorts(*change.after);
  if (wants) {
    // A pod that came, or whose earlier ask was refused: ask. One that holds its lease keeps it,
    // whatever it asks now (the allocator's answer to a key it holds is that lease), so asking
    // again at each change (a phase, an annotation) would only write the journal again.
    if (!service_.get(AttachmentKey::ofHostNetworkPod(change.after->sandboxUid()))) {
      lease(*change.after);
    }
  } else if (wanted) {
    const pods::NodePod& pod = *change.before;
    {
      std::lock_guard lock(mutex_);
      told_.erase(pod.uid);
    }
    const std::string_view why = !change.after              ? "gone"
                                 : change.after->deleting   ? "deleting"
                                 : change.after->finished() ? "finished"
                                                            : "not_asking";
    release({AttachmentKey::ofHostNetworkPod(pod.sandboxUid())}, why);
  }
}

void HostNetworkPods::sweep() {
  std::vector<AttachmentKey> stale;
  for (const Lease& held : service_.list("", "")) {
    const std::string_view uid = held.key.hostNetworkPodUid();
    if (uid.empty()) continue;
    const auto pod = pods_.bySandboxUid(uid);
    if (!pod || !wantsHostPorts(*pod)) stale.push_back(held.key);
  }
  if (!stale.empty()) release(std::move(stale), "not_on_node");
}

void HostNetworkPods::awaitLease(const std::string& sandboxUid, std::chrono::milliseconds bound) {
  const auto pod = pods_.bySandboxUid(sandboxUid);
  if (!pod || !wantsHostPorts(*pod)) return;
  if (service_.get(AttachmentKey::ofHostNetworkPod(sandboxUid))) return;
  // The watch's thread may ask at the same moment: the allocator answers a key it holds with its
  // lease, so the second ask changes nothing.
  auto answered = std::make_shared<std::promise<void>>();
  lease(*pod, [answered] { answered->set_value(); });
  if (answered->get_future().wait_for(bound) == std::future_status::timeout) {
    log::event(Component::kAlloc, Level::kWarn, "alloc.host_network_slow",
               {{"pod", pod->describe()}, {"uid", pod->uid}, {"waited_ms", bound.count()}});
  }
}

void HostNetworkPods::lease(const pods::NodePod& pod, std::function<void()> then) {
  nlohmann::json annotations = nlohmann::json::object();
  for (const auto& [key, value] : pod.annotations) annotations[key] = value;
  auto asked = annotations::parsePortAnnotations(annotations, annotations::PodNetwork::kHost);
  if (!asked) {
    refused(pod, asked.error().message);
    if (then) then();
    return;
  }
  AllocationRequest request;
  // Keyed by the UID the pod's cgroup carries, which the pod socket reads (a static pod's is its
  // manifest's hash); published with the API's.
  request.key = AttachmentKey::ofHostNetworkPod(pod.sandboxUid());
  request.pod = {pod.namespaceName, pod.name, pod.uid};
  // A hostNetwork pod's own hostPorts are its sockets' business, but a cluster pool's claims come
  // as hostPorts too: the allocator takes them back as the entries' claims.
  if (clusterPools_.contains(asked->pool)) request.statics = pod.hostPorts;
  request.pool = std::move(asked->pool);
  request.dynamics = std::move(asked->dynamics);
  request.sticky = asked->sticky;
  // No netns (the node's own: the socket check runs there) and no forwarding: the pod binds the
  // port itself.
  service_.allocate(request, [this, pod, then = std::move(then)](Result<Lease> granted) {
    if (!granted) {
      refused(pod, granted.error().message);
    } else {
      std::lock_guard lock(mutex_);
      told_.erase(pod.uid);  // a later refusal is news again
    }
    if (then) then();
  });
}

void HostNetworkPods::release(std::vector<AttachmentKey> keys, std::string_view why) {
  service_.releaseKeys(std::move(keys), service::AgentService::ReleaseVia::kPodGone,
                       [why = std::string(why)](Result<std::vector<Lease>> released) {
                         if (!released) {
                           log::event(Component::kAlloc, Level::kError,
                                      "alloc.host_network_release_failed",
                                      {{"why", why}, {"cause", released.error().message}});
                         }
                       });
}

void HostNetworkPods::refused(const pods::NodePod& pod, const std::string& cause) {
  log::event(Component::kAlloc, Level::kWarn, "alloc.host_network_refused",
             {{"pod", pod.describe()}, {"uid", pod.uid}, {"cause", cause}});
  {
    std::lock_guard lock(mutex_);
    auto [told, first] = told_.try_emplace(pod.uid, cause);
    if (!first && told->second == cause) return;
    told->second = cause;
  }
  publisher_.warn({{pod.namespaceName, pod.name, pod.uid},
                   std::string(publish::kPortsNotGranted),
                   "hostport.io/ports could not be granted: " + cause});
}

}  // namespace hostport::agent::daemon
