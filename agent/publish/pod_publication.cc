#include "agent/publish/pod_publication.h"

#include <algorithm>
#include <nlohmann/json.hpp>
#include <vector>

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

namespace {

nlohmann::json portJson(const PortGrant& grant) {
  nlohmann::json port = {{"hostPort", grant.hostPort},
                         {"protocol", std::string(protocolName(grant.protocol))}};
  // A hostNetwork pod's port forwards nowhere: its process binds the host port itself.
  if (grant.containerPort != 0) port["containerPort"] = grant.containerPort;
  if (grant.count > 1) port["count"] = grant.count;
  if (grant.hostIp) port["hostIP"] = grant.hostIp->str();
  return port;
}

/// The named ports of one lease, by name.
nlohmann::json namedPorts(const Lease& lease) {
  nlohmann::json ports = nlohmann::json::object();
  for (const PortGrant& grant : lease.ports) {
    if (!grant.name.empty()) ports[grant.name] = portJson(grant);
  }
  return ports;
}

/// The primary interface first: eth0 (the runtime's default), then the others by name.
bool primaryFirst(const Lease* a, const Lease* b) {
  const bool aPrimary = a->key.ifname == "eth0", bPrimary = b->key.ifname == "eth0";
  if (aPrimary != bPrimary) return aPrimary;
  return a->key < b->key;
}

}  // namespace

std::string publicationPatch(std::span<const Lease> leases, const std::string& nodeName) {
  if (leases.empty()) return {};
  const PodIdentity& pod = leases.front().pod;
  if (pod.namespaceName.empty() || pod.name.empty() || pod.uid.empty()) return {};
  std::vector<const Lease*> ordered;
  for (const Lease& lease : leases) ordered.push_back(&lease);
  std::ranges::sort(ordered, primaryFirst);
  nlohmann::json ports = nlohmann::json::object();
  nlohmann::json interfaces = nlohmann::json::object();
  nlohmann::json annotations = nlohmann::json::object();
  for (const Lease* lease : ordered) {
    nlohmann::json named = namedPorts(*lease);
    if (named.empty()) continue;
    for (const PortGrant& grant : lease->ports) {
      if (grant.name.empty() || ports.contains(grant.name)) continue;
      ports[grant.name] = named[grant.name];
      annotations[std::string(annotations::kAllocatedAnnotationPrefix) + grant.name] =
          grant.hostPorts().str();
    }
    interfaces[lease->key.ifname] = std::move(named);
  }
  if (ports.empty()) return {};
  nlohmann::json assigned = {{"node", nodeName}, {"ports", std::move(ports)}};
  if (interfaces.size() > 1) assigned["interfaces"] = std::move(interfaces);
  annotations[std::string(annotations::kAssignedAnnotation)] = assigned.dump();
  const nlohmann::json patch = {
      {"metadata", {{"uid", pod.uid}, {"annotations", std::move(annotations)}}}};
  return patch.dump();
}

}  // namespace hostport::agent::publish
