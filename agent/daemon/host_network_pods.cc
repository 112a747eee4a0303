#include "agent/daemon/host_network_pods.h"

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

HostNetworkPods::HostNetworkPods(service::AgentService& service, pods::NodePods& pods)
    : service_(service), pods_(pods) {
  pods_.listen([this](const pods::PodChange& change) { onChange(change); });
  pods_.listenToLists([this] { sweep(); });
}

void HostNetworkPods::onChange(const pods::PodChange& change) {
  const bool wanted = change.before && wantsHostPorts(*change.before);
  const bool wants = change.after && wantsHostPorts(*change.after);
  if (wants) {
    // A pod that came, or changed what it asks: ask again (the same ports come back while they
    // are free: the allocator's answer to a key it holds is that lease).
    lease(*change.after);
  } else if (wanted) {
    const pods::NodePod& pod = *change.before;
    const std::string_view why = !change.after              ? "gone"
                                 : change.after->deleting   ? "deleting"
                                 : change.after->finished() ? "finished"
                                                            : "not_asking";
    release({AttachmentKey::ofHostNetworkPod(pod.uid)}, why);
  }
}

void HostNetworkPods::sweep() {
  std::vector<AttachmentKey> stale;
  for (const Lease& held : service_.list("", "")) {
    const std::string_view uid = held.key.hostNetworkPodUid();
    if (uid.empty()) continue;
    const auto pod = pods_.byUid(uid);
    if (!pod || !wantsHostPorts(*pod)) stale.push_back(held.key);
  }
  if (!stale.empty()) release(std::move(stale), "not_on_node");
}

void HostNetworkPods::lease(const pods::NodePod& pod) {
  nlohmann::json annotations = nlohmann::json::object();
  for (const auto& [key, value] : pod.annotations) annotations[key] = value;
  auto asked = annotations::parsePortAnnotations(annotations, annotations::PodNetwork::kHost);
  if (!asked) {
    log::event(Component::kAlloc, Level::kWarn, "alloc.host_network_refused",
               {{"pod", pod.describe()}, {"uid", pod.uid}, {"cause", asked.error().message}});
    return;
  }
  AllocationRequest request;
  request.key = AttachmentKey::ofHostNetworkPod(pod.uid);
  request.pod = {pod.namespaceName, pod.name, pod.uid};
  request.pool = std::move(asked->pool);
  request.dynamics = std::move(asked->dynamics);
  request.sticky = asked->sticky;
  // No netns (the node's own: the socket check runs there) and no forwarding: the pod binds the
  // port itself.
  service_.allocate(request, [pod = pod.describe(), uid = pod.uid](Result<Lease> granted) {
    if (!granted) {
      log::event(Component::kAlloc, Level::kWarn, "alloc.host_network_refused",
                 {{"pod", pod}, {"uid", uid}, {"cause", granted.error().message}});
    }
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

}  // namespace hostport::agent::daemon
