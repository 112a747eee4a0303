#pragma once
// What the agent keeps of each pod on its node (issue 25): the few fields its decisions read,
// taken from the pod object a watch delivers, so that a node with hundreds of pods keeps
// kilobytes, not their whole objects. Pure: read from JSON, nothing else.

#include <cstdint>
#include <map>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "common/error.h"
#include "lease/lease.h"

namespace hostport::agent::pods {

struct NodePod {
  std::string uid;
  /// A static pod's mirror in the API has a UID of its own; its sandbox carries the static pod's
  /// (the kubelet's hash of the manifest, kubernetes.io/config.mirror). Empty for other pods.
  std::string staticUid;
  std::string namespaceName;
  std::string name;
  /// The hostport.io/ annotations the pod's author wrote (ports, pool, sticky, ...); the ones the
  /// agent writes back (assigned, allocated-*) are left out, so its own publication does not
  /// read as a change of the pod.
  std::map<std::string, std::string, std::less<>> annotations;
  bool hostNetwork = false;
  /// A hostNetwork pod's containers' hostPorts (none for other pods): where the admission server
  /// writes a cluster pool's claims (agent/core/cluster_claims.h), as hostPort == containerPort.
  std::vector<StaticPortClaim> hostPorts;
  /// hostport.io/<pool> asked in the containers' requests, summed per pool, as the scheduler
  /// counts them (the pool's name without the prefix).
  std::map<std::string, int64_t, std::less<>> poolRequests;
  std::string phase;      // status.phase: "Pending", "Running", "Succeeded", "Failed", ""
  bool deleting = false;  // metadata.deletionTimestamp is set

  /// Ended for good: Succeeded or Failed, whose ports are free again.
  bool finished() const { return phase == "Succeeded" || phase == "Failed"; }
  std::string describe() const { return namespaceName + "/" + name; }
  /// The UID the pod's sandbox carries (CNI's K8S_POD_UID, the lease's pod.uid).
  const std::string& sandboxUid() const { return staticUid.empty() ? uid : staticUid; }
  friend bool operator==(const NodePod&, const NodePod&) = default;
};

/// The record of `pod`, a Pod object as the API server sends it. kDecode naming the field when
/// metadata.uid, namespace or name is missing; what else is malformed is read as absent (a
/// request that is no whole number is not counted).
Result<NodePod> readNodePod(const nlohmann::json& pod);

}  // namespace hostport::agent::pods
