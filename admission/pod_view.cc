#include "admission/pod_view.h"

#include "annotations/annotation_names.h"
#include "common/json_fields.h"

namespace hostport::admission {
namespace {

using nlohmann::json;

constexpr std::string_view kObject = "object";

/// The hostport.io/ resources of resources.<key>: each value a string, as the API server writes
/// quantities.
Result<void> readResourceList(const json& resources, const std::string& parent,
                              std::string_view key, bool& present,
                              std::map<std::string, std::string, std::less<>>& out) {
  const JsonField field = jsonField(resources, parent, key);
  if (field.value == nullptr) return {};
  if (!field.value->is_object()) return invalidValue(field, "must be an object");
  present = true;
  for (const auto& [name, quantity] : field.value->items()) {
    if (!name.starts_with(annotations::kResourcePrefix)) continue;
    HOSTPORT_TRY(out[name], readString(JsonField{&quantity, memberPath(field.path, name)}));
  }
  return {};
}

Result<ContainerPortView> readContainerPort(const json& entry, const std::string& path) {
  if (!entry.is_object()) return invalidValue(path, entry, "must be an object");
  ContainerPortView port;
  HOSTPORT_TRY(port.name, readString(jsonField(entry, path, "name"), ""));
  HOSTPORT_TRY(port.containerPort, readPort(jsonField(entry, path, "containerPort")));
  HOSTPORT_TRY(const uint64_t hostPort,
               readInteger(jsonField(entry, path, "hostPort"), 0, 65535, 0));
  port.hostPort = static_cast<uint16_t>(hostPort);
  HOSTPORT_TRY(port.protocol, readProtocol(jsonField(entry, path, "protocol")));
  HOSTPORT_TRY(port.hostIp, readHostIp(jsonField(entry, path, "hostIP")));
  return port;
}

Result<ContainerView> readContainer(const json& entry, const std::string& path) {
  if (!entry.is_object()) return invalidValue(path, entry, "must be an object");
  ContainerView container;
  HOSTPORT_TRY(container.name, readString(jsonField(entry, path, "name")));
  const JsonField ports = jsonField(entry, path, "ports");
  HOSTPORT_TRY(const json* list, readArrayOrEmpty(ports, kMaxPortsPerContainer));
  for (std::size_t i = 0; i < list->size(); ++i) {
    HOSTPORT_TRY(auto port, readContainerPort((*list)[i], elementPath(ports.path, i)));
    container.ports.push_back(std::move(port));
  }
  const JsonField resources = jsonField(entry, path, "resources");
  if (resources.value != nullptr) {
    if (!resources.value->is_object()) return invalidValue(resources, "must be an object");
    container.hasResources = true;
    HOSTPORT_TRY_VOID(readResourceList(*resources.value, resources.path, "requests",
                                       container.hasRequests, container.requests));
    HOSTPORT_TRY_VOID(readResourceList(*resources.value, resources.path, "limits",
                                       container.hasLimits, container.limits));
  }
  return container;
}

}  // namespace

std::optional<std::size_t> PodView::containerNamed(std::string_view name) const {
  for (std::size_t i = 0; i < containers.size(); ++i) {
    if (containers[i].name == name) return i;
  }
  return std::nullopt;
}

json annotationsWithPrefix(const json& pod, std::string_view prefix) {
  json out = json::object();
  const json* metadata = jsonMember(pod, "metadata");
  const json* annotations = metadata != nullptr ? jsonMember(*metadata, "annotations") : nullptr;
  if (annotations == nullptr || !annotations->is_object()) return out;
  for (const auto& [key, value] : annotations->items()) {
    if (key.starts_with(prefix)) out[key] = value;
  }
  return out;
}

Result<PodView> readPod(const json& pod) {
  if (!pod.is_object()) return invalidValue(kObject, pod, "must be an object");
  PodView view;
  const JsonField metadata = jsonField(pod, kObject, "metadata");
  if (metadata.value != nullptr) {
    if (!metadata.value->is_object()) return invalidValue(metadata, "must be an object");
    const JsonField annotations = jsonField(*metadata.value, metadata.path, "annotations");
    if (annotations.value != nullptr) {
      if (!annotations.value->is_object()) return invalidValue(annotations, "must be an object");
      for (const auto& [key, value] : annotations.value->items()) {
        if (!value.is_string()) {
          return invalidValue(memberPath(annotations.path, key), value, "must be a string");
        }
      }
      view.annotations = *annotations.value;
      view.hasAnnotations = true;
    }
  }
  const JsonField spec = jsonField(pod, kObject, "spec");
  if (spec.value == nullptr) return missingValue(spec.path);
  if (!spec.value->is_object()) return invalidValue(spec, "must be an object");
  HOSTPORT_TRY(view.hostNetwork, readBool(jsonField(*spec.value, spec.path, "hostNetwork"), false));
  const JsonField containers = jsonField(*spec.value, spec.path, "containers");
  HOSTPORT_TRY(const json* list, readArray(containers, kMaxContainers));
  for (std::size_t i = 0; i < list->size(); ++i) {
    HOSTPORT_TRY(auto container, readContainer((*list)[i], elementPath(containers.path, i)));
    view.containers.push_back(std::move(container));
  }
  return view;
}

}  // namespace hostport::admission
