#pragma once
// What a pod will ask of its node's agent at sandbox creation, read from the pod object as the
// plugin reads it from the runtime (the containers' hostPorts are its portMappings, the
// annotations its dynamic ports), and judged by the agent's own allocator as if the pod were alone
// on the node. So a refusal here is the one the node would give, in the same words, and nothing
// that depends on the node (host sockets, other pods' leases, quotas in use) is judged.

#include <expected>
#include <vector>

#include "admission/pod_view.h"
#include "agent/core/allocator.h"
#include "common/error.h"
#include "lease/lease.h"

namespace hostport::admission {

struct PodDemand {
  AllocationRequest request;  // no key, no forwarding: nothing is allocated
  /// What the pod takes from each pool, its own pool first; empty when it asks for nothing (no
  /// hostPort, no dynamic port), as the plugin then does not call the agent.
  std::vector<agent::core::PoolDemand> pools;
};

/// The demand of `pod`, whose namespace and name (empty before generateName is resolved) are
/// `identity`'s. A hostNetwork pod's is its hostport.io/ports in their host form (no
/// containerPort), as the agent leases them through its pod watch; its hostPorts are its own.
/// Errors: the annotation parser's kInvalidArgument, or the allocator's refusal (kInvalidArgument,
/// kNotAllowed, kQuotaExceeded), unchanged.
Result<PodDemand> demandOf(const PodView& pod, PodIdentity identity,
                           const agent::core::Allocator& judge);

}  // namespace hostport::admission
