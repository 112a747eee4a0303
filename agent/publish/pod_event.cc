#include "agent/publish/pod_event.h"

#include <cstdio>

#include "kube/api_time.h"

namespace hostport::agent::publish {

nlohmann::json podEvent(const PodWarning& warning, const std::string& node,
                        std::chrono::system_clock::time_point now) {
  const auto nanoseconds =
      std::chrono::duration_cast<std::chrono::nanoseconds>(now.time_since_epoch()).count();
  char suffix[24];
  std::snprintf(suffix, sizeof suffix, ".%llx", static_cast<unsigned long long>(nanoseconds));
  const std::string time = kube::apiTime(now);
  return {
      {"apiVersion", "v1"},
      {"kind", "Event"},
      {"metadata", {{"name", warning.pod.name + suffix}, {"namespace", warning.pod.namespaceName}}},
      {"involvedObject",
       {{"apiVersion", "v1"},
        {"kind", "Pod"},
        {"namespace", warning.pod.namespaceName},
        {"name", warning.pod.name},
        {"uid", warning.pod.uid}}},
      {"type", "Warning"},
      {"reason", warning.reason},
      {"message", warning.message},
      {"source", {{"component", "hostport-agent"}, {"host", node}}},
      {"reportingComponent", "hostport.io/agent"},
      {"reportingInstance", node},
      {"firstTimestamp", time},
      {"lastTimestamp", time},
      {"count", 1}};
}

std::string eventsPath(const std::string& namespaceName) {
  return "/api/v1/namespaces/" + namespaceName + "/events";
}

}  // namespace hostport::agent::publish
