#include "agent/pods/node_pod.h"

#include <charconv>

#include "annotations/annotation_names.h"
#include "common/json_fields.h"

namespace hostport::agent::pods {
namespace {

using nlohmann::json;

std::string text(const json* value) {
  return value != nullptr && value->is_string() ? value->get<std::string>() : std::string();
}

const json* at(const json& object, std::initializer_list<std::string_view> path) {
  const json* here = &object;
  for (const std::string_view key : path) {
    here = jsonMember(*here, key);
    if (here == nullptr) return nullptr;
  }
  return here;
}

/// Set by the kubelet on the mirror pod of a static pod, to the static pod's UID.
constexpr std::string_view kMirrorAnnotation = "kubernetes.io/config.mirror";

bool writtenByTheAgent(std::string_view key) {
  return key == annotations::kAssignedAnnotation ||
         key.starts_with(annotations::kAllocatedAnnotationPrefix);
}

/// A whole, non-negative quantity ("3"); nullopt for anything else ("1k", "0.5", "-1").
std::optional<int64_t> wholeQuantity(const json& quantity) {
  if (quantity.is_number_integer()) return quantity.get<int64_t>();
  if (!quantity.is_string()) return std::nullopt;
  const std::string& value = quantity.get_ref<const std::string&>();
  int64_t out = 0;
  const auto [end, error] = std::from_chars(value.data(), value.data() + value.size(), out);
  if (error != std::errc() || end != value.data() + value.size() || out < 0) return std::nullopt;
  return out;
}

/// The ports of `container` that name a hostPort, as static claims; a malformed one is left out
/// (the readers the plugin reads portMappings with: ports 1-65535, protocol tcp when absent).
void readHostPorts(const json& container, std::vector<StaticPortClaim>& out) {
  const json* ports = at(container, {"ports"});
  if (ports == nullptr || !ports->is_array()) return;
  for (const json& port : *ports) {
    const auto host = readPort(jsonField(port, "", "hostPort"));
    const auto inside = readPort(jsonField(port, "", "containerPort"));
    const auto protocol = readProtocol(jsonField(port, "", "protocol"));
    if (host && inside && protocol) {
      out.push_back({*host, *inside, portProtocol(*protocol), std::nullopt});
    }
  }
}

}  // namespace

Result<NodePod> readNodePod(const json& pod) {
  NodePod record;
  for (const auto& [field, out] : {std::pair{"uid", &record.uid},
                                   {"namespace", &record.namespaceName},
                                   {"name", &record.name}}) {
    *out = text(at(pod, {"metadata", field}));
    if (out->empty()) {
      return fail(ErrorCode::kDecode, std::string("a pod without metadata.") + field);
    }
  }
  record.deleting = at(pod, {"metadata", "deletionTimestamp"}) != nullptr;
  record.staticUid = text(at(pod, {"metadata", "annotations", kMirrorAnnotation}));
  if (const json* annotations = at(pod, {"metadata", "annotations"});
      annotations != nullptr && annotations->is_object()) {
    for (const auto& [key, value] : annotations->items()) {
      if (!key.starts_with(annotations::kPrefix) || writtenByTheAgent(key) || !value.is_string()) {
        continue;
      }
      record.annotations.emplace(key, value.get<std::string>());
    }
  }
  const json* hostNetwork = at(pod, {"spec", "hostNetwork"});
  record.hostNetwork =
      hostNetwork != nullptr && hostNetwork->is_boolean() && hostNetwork->get<bool>();
  if (const json* containers = at(pod, {"spec", "containers"});
      containers != nullptr && containers->is_array()) {
    for (const json& container : *containers) {
      if (record.hostNetwork) readHostPorts(container, record.hostPorts);
      const json* requests = at(container, {"resources", "requests"});
      if (requests == nullptr || !requests->is_object()) continue;
      for (const auto& [resource, quantity] : requests->items()) {
        if (!resource.starts_with(annotations::kResourcePrefix)) continue;
        if (const auto count = wholeQuantity(quantity)) {
          record.poolRequests[resource.substr(annotations::kResourcePrefix.size())] += *count;
        }
      }
    }
  }
  record.phase = text(at(pod, {"status", "phase"}));
  return record;
}

}  // namespace hostport::agent::pods
