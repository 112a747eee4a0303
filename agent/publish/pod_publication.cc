#include "agent/publish/pod_publication.h"

#include <nlohmann/json.hpp>

#include "annotations/annotation_names.h"

namespace hostport::agent::publish {

std::string podPath(const PodIdentity& pod) {
  return "/api/v1/namespaces/" + pod.namespaceName + "/pods/" + pod.name;
}

std::string nodeStatusPath(const std::string& nodeName) {
  return "/api/v1/nodes/" + nodeName + "/status";
}

std::string nodeCapacityPatch(const std::map<std::string, uint64_t>& capacities) {
  nlohmann::json resources = nlohmann::json::object();
  // Quantities are strings in the API.
  for (const auto& [pool, free] : capacities) {
    resources[std::string(annotations::kResourcePrefix) + pool] = std::to_string(free);
  }
  return nlohmann::json{{"status", {{"capacity", resources}, {"allocatable", resources}}}}.dump();
}

std::string publicationPatch(const Lease& lease, const std::string& nodeName) {
  if (lease.pod.namespaceName.empty() || lease.pod.name.empty() || lease.pod.uid.empty()) return {};
  nlohmann::json ports = nlohmann::json::object();
  nlohmann::json annotations = nlohmann::json::object();
  for (const PortGrant& grant : lease.ports) {
    if (grant.name.empty()) continue;
    nlohmann::json port = {{"hostPort", grant.hostPort},
                           {"protocol", std::string(protocolName(grant.protocol))}};
    // A hostNetwork pod's port forwards nowhere: its process binds the host port itself.
    if (grant.containerPort != 0) port["containerPort"] = grant.containerPort;
    if (grant.count > 1) port["count"] = grant.count;
    if (grant.hostIp) port["hostIP"] = grant.hostIp->str();
    ports[grant.name] = std::move(port);
    std::string value = std::to_string(grant.hostPort);
    if (grant.count > 1) value += "-" + std::to_string(grant.hostPort + grant.count - 1);
    annotations[std::string(annotations::kAllocatedAnnotationPrefix) + grant.name] = value;
  }
  if (ports.empty()) return {};
  annotations[std::string(annotations::kAssignedAnnotation)] =
      nlohmann::json{{"node", nodeName}, {"ports", std::move(ports)}}.dump();
  const nlohmann::json patch = {
      {"metadata", {{"uid", lease.pod.uid}, {"annotations", std::move(annotations)}}}};
  return patch.dump();
}

}  // namespace hostport::agent::publish
