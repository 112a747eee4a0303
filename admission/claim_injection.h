#pragma once
// What the claim webhook writes into a pod whose ports were claimed in a cluster pool: each
// claimed port as the hostPort of the container port it forwards to, so that the runtime hands it
// to the node's plugin as a static mapping (agent/core/cluster_claims.h takes it back as the
// entry's claim) and the scheduler's NodePorts filter keeps the pod off a node where it is taken;
// hostport.io/allocated-<entry>, so the ports are known before the pod is scheduled (a downward-API
// env var has them at first start); and hostport.io/claim-holder, whom the claims name.

#include <string>
#include <vector>

#include "admission/cluster_claimer.h"
#include "admission/json_patch.h"
#include "admission/pod_view.h"
#include "common/error.h"
#include "lease/lease.h"

namespace hostport::admission {

/// Adds to `patch` the operations that make `pod` carry `claimed` (by entry, in the order of
/// `dynamics`). A container port of the entry's containerPort and protocol, in any container,
/// takes the hostPort; one that no container declares is added to container `target`. A
/// hostNetwork pod's entry has no containerPort: its ports are written with containerPort equal
/// to hostPort, as the kubelet requires of a pod on the node's network.
/// kInvalidArgument naming the container and port when a container port already has another
/// hostPort: the claim sets it, and overwriting the author's would hide the mistake.
Result<void> injectClaims(const PodView& pod, std::size_t target,
                          const std::vector<DynamicPortRequest>& dynamics,
                          const std::vector<ClaimedEntry>& claimed, const std::string& holder,
                          JsonPatch& patch);

}  // namespace hostport::admission
