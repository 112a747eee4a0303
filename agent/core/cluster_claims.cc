#include "agent/core/cluster_claims.h"

#include <algorithm>
#include <unordered_map>

#include "common/quote.h"

namespace hostport::agent::core {
namespace {

bool isCluster(const std::vector<PoolSpec>& specs, const PoolOfPort& poolOf, uint16_t port) {
  const uint16_t pool = poolOf[port];
  return pool != kNoPool && specs[pool].scope == PoolScope::kCluster;
}

/// The mapping `row` needs at its port `offset` for kernel `protocol` when its first host port is
/// `first`: the runtime writes one per protocol, a tcpudp port being two.
bool fits(const StaticPortClaim& mapping, const DynamicPortRequest& row, uint16_t first,
          uint32_t offset, Protocol protocol) {
  const uint32_t hostPort = first + offset;
  const uint32_t containerPort = row.containerPort == 0 ? hostPort : row.containerPort + offset;
  return mapping.hostPort == hostPort && mapping.containerPort == containerPort &&
         !mapping.hostIp &&
         (mapping.protocol == portProtocol(protocol) || mapping.protocol == row.protocol);
}

}  // namespace

Result<std::optional<ClusterClaims>> matchClusterClaims(const AllocationRequest& request,
                                                        std::size_t poolIndex,
                                                        const std::vector<PoolSpec>& specs,
                                                        const PoolOfPort& poolOf) {
  const bool clusterPool = specs[poolIndex].scope == PoolScope::kCluster;
  const bool staticInCluster = std::ranges::any_of(request.statics, [&](const auto& mapping) {
    return isCluster(specs, poolOf, mapping.hostPort);
  });
  if (!clusterPool && !staticInCluster) return std::nullopt;

  ClusterClaims claims;
  std::vector<bool> taken(request.statics.size(), false);
  if (clusterPool) {
    // The mappings by host port and kernel protocol, so that following a row's block is a lookup
    // per port: the rows and mappings are the pod author's, at most kMaxPortsPerRequest each.
    std::unordered_multimap<uint32_t, std::size_t> byPort;
    const auto key = [](uint32_t port, Protocol protocol) {
      return port << 2 | static_cast<uint32_t>(protocol);
    };
    for (std::size_t i = 0; i < request.statics.size(); ++i) {
      for (const auto protocol : kernelProtocols(request.statics[i].protocol)) {
        byPort.emplace(key(request.statics[i].hostPort, protocol), i);
      }
    }
    claims.firstPorts.reserve(request.dynamics.size());
    std::vector<std::size_t> used;
    for (const auto& row : request.dynamics) {
      const auto kernel = kernelProtocols(row.protocol);
      // The mapping that carries `row`'s port `offset` for `protocol` from `first`, not taken by
      // an earlier row nor this attempt.
      const auto find = [&](uint16_t first, uint32_t offset,
                            Protocol protocol) -> std::optional<std::size_t> {
        const auto [begin, end] = byPort.equal_range(key(first + offset, protocol));
        for (auto it = begin; it != end; ++it) {
          const std::size_t j = it->second;
          if (!taken[j] && std::ranges::find(used, j) == used.end() &&
              fits(request.statics[j], row, first, offset, protocol)) {
            return j;
          }
        }
        return std::nullopt;
      };
      // A mapping of the pool that fits the row's first port is a candidate first port; the rest
      // of the row must follow from it.
      std::optional<uint16_t> claimed;
      for (std::size_t i = 0; i < request.statics.size() && !claimed; ++i) {
        const uint16_t first = request.statics[i].hostPort;
        if (taken[i] || poolOf[first] != poolIndex ||
            !fits(request.statics[i], row, first, 0, kernel.front())) {
          continue;
        }
        used.clear();
        bool complete = true;
        for (uint32_t offset = 0; offset < row.count && complete; ++offset) {
          for (const auto protocol : kernel) {
            const auto found = find(first, offset, protocol);
            if (!found) {
              complete = false;
              break;
            }
            used.push_back(*found);
          }
        }
        if (complete) claimed = first;
      }
      if (claimed) {
        for (const std::size_t j : used) taken[j] = true;
      }
      claims.firstPorts.push_back(claimed);
    }
  }
  for (std::size_t i = 0; i < request.statics.size(); ++i) {
    if (taken[i]) continue;
    const auto& mapping = request.statics[i];
    if (isCluster(specs, poolOf, mapping.hostPort)) {
      return fail(ErrorCode::kInvalidArgument,
                  "hostPort " + std::to_string(mapping.hostPort) + "/" +
                      std::string(protocolName(mapping.protocol)) + " lies in cluster pool " +
                      quoteText(specs[poolOf[mapping.hostPort]].name) +
                      ", whose ports are taken only by the hostport.io/ports entries the "
                      "admission server claimed them for");
    }
    claims.statics.push_back(mapping);
  }
  return claims;
}

Result<void> requireClaims(const AllocationRequest& request, const ClusterClaims& claims,
                           const PoolSpec& pool) {
  for (std::size_t i = 0; i < request.dynamics.size(); ++i) {
    if (claims.firstPorts[i]) continue;
    const auto& row = request.dynamics[i];
    return fail(ErrorCode::kInvalidArgument,
                "port " + quoteText(row.name) + " asks cluster pool " + quoteText(pool.name) +
                    " but the pod carries no hostPort claimed for it: a cluster pool's ports are "
                    "claimed by hostport-admission when the pod is created (is its cluster-pool "
                    "webhook installed?)");
  }
  return {};
}

}  // namespace hostport::agent::core
