#pragma once
// What the agent writes on a pod about its ports: the contract of issue 13 §2, documented in the
// reference, docs/annotations.md ("Ports on the pod object"). Pure.
//
//   hostport.io/assigned: '{"node":"node-1","ports":{"web":{"hostPort":30001,"protocol":"tcp",
//                          "containerPort":8080},"rtp":{"hostPort":20000,"protocol":"udp",
//                          "containerPort":5000,"count":10}}}'
//   hostport.io/allocated-web: "30001"
//   hostport.io/allocated-rtp: "20000-20009"
//
// Only named (dynamic) grants appear; static hostPorts are in the pod spec already. The patch is
// a JSON merge patch that carries the pod's UID: the API server refuses it (409) when the pod of
// that name is another one, which is how kubelet's own status patches avoid a re-created pod.
//
// One patch per pod: a pod with several interfaces has a lease per interface, each granted the
// pod's named ports. `ports` and the allocated-<name> annotations are its primary interface's
// (eth0, else the first by name), with any name only another interface has; `interfaces` holds
// every interface's, by interface name, when more than one has named ports:
//
//   hostport.io/assigned: '{"node":"node-1","ports":{"web":{...}},
//                          "interfaces":{"eth0":{"web":{...}},"net1":{"web":{...}}}}'

#include <cstdint>
#include <map>
#include <span>
#include <string>

#include "lease/lease.h"

namespace hostport::agent::publish {

/// The merge patch for the pod of `leases` (its sandbox's, one per interface, or its hostNetwork
/// lease), or an empty string when it has nothing to publish (no named grant, or no pod
/// namespace, name and UID to aim at).
std::string publicationPatch(std::span<const Lease> leases, const std::string& nodeName);

/// "/api/v1/namespaces/<ns>/pods/<name>": the names are DNS labels/subdomains, nothing to escape.
std::string podPath(const PodIdentity& pod);

/// One extended resource per pool, `hostport.io/<pool>`, in the Node's status.capacity and
/// status.allocatable (issue 13 §3): a merge patch for "/api/v1/nodes/<node>/status".
std::string nodeCapacityPatch(const std::map<std::string, uint64_t>& capacities);
std::string nodeStatusPath(const std::string& nodeName);

}  // namespace hostport::agent::publish
