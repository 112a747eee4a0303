#pragma once
// A cluster pool's ports (pool_spec.h, PoolScope::kCluster) reach the node already chosen: the
// admission server claimed each one through the API server when the pod was created and wrote it
// into the pod as the container port's hostPort. So the runtime hands them to the plugin as static
// port mappings, and here they are matched back to the annotation rows they were claimed for, so
// the lease grants each row the port its claim names (and publishes it under the row's name).

#include <optional>
#include <vector>

#include "agent/core/pool_spec.h"
#include "common/error.h"
#include "lease/lease.h"

namespace hostport::agent::core {

/// A request's static mappings sorted out against the cluster pools.
struct ClusterClaims {
  /// By dynamic row: the first host port claimed for it; nullopt when the pod carries no claim
  /// for the row (empty when the request's pool is a node pool).
  std::vector<std::optional<uint16_t>> firstPorts;
  /// The request's static claims less the mappings that were claims.
  std::vector<StaticPortClaim> statics;
};

/// nullopt when the request's pool is a node pool and none of its static ports lies in a cluster
/// pool: the request stands as it is. Otherwise each dynamic row of a cluster pool takes the
/// mappings whose host ports run contiguously from a port of the pool, one per port and kernel
/// protocol, whose container ports are the row's (a hostNetwork row's: equal to the host port),
/// without a host IP. kInvalidArgument for a static port left in a cluster pool: a hand-written
/// hostPort there would take a port no claim holds, or a claim made for another row.
Result<std::optional<ClusterClaims>> matchClusterClaims(const AllocationRequest& request,
                                                        std::size_t poolIndex,
                                                        const std::vector<PoolSpec>& specs,
                                                        const PoolOfPort& poolOf);

/// kInvalidArgument naming the first dynamic row of `pool` (a cluster pool) without a claim: the
/// pod did not pass the admission server's cluster-pool webhook.
Result<void> requireClaims(const AllocationRequest& request, const ClusterClaims& claims,
                           const PoolSpec& pool);

}  // namespace hostport::agent::core
