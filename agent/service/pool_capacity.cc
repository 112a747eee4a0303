#include "agent/service/pool_capacity.h"

#include <algorithm>

namespace hostport::agent::service {
namespace {

/// The kernel protocols a pool serves; every one for a pool without a protocol list.
std::vector<Protocol> protocolsOf(const core::PoolSpec& pool) {
  if (pool.protocols.empty()) return {Protocol::kTcp, Protocol::kUdp, Protocol::kSctp};
  std::vector<Protocol> out;
  for (const PortProtocol protocol : pool.protocols) {
    for (const Protocol kernel : kernelProtocols(protocol)) {
      if (std::ranges::find(out, kernel) == out.end()) out.push_back(kernel);
    }
  }
  return out;
}

}  // namespace

std::map<std::string, uint64_t> poolCapacities(const std::vector<core::PoolSpec>& pools,
                                               core::PortProbe& probe) {
  std::map<std::string, uint64_t> capacities;
  for (const auto& pool : pools) {
    // A cluster pool's ports are claimed at admission and injected as hostPorts, which the
    // scheduler counts itself; a node resource for it would be asked by no pod.
    if (pool.scope == core::PoolScope::kCluster) continue;
    const auto protocols = protocolsOf(pool);
    uint64_t free = 0;
    for (const auto& range : pool.ranges) {
      for (uint32_t port = range.first; port <= range.last; ++port) {
        const bool held = std::ranges::any_of(protocols, [&](Protocol protocol) {
          return probe.isBound(protocol, static_cast<uint16_t>(port));
        });
        if (!held) ++free;
      }
    }
    capacities[pool.name] = free;
  }
  return capacities;
}

}  // namespace hostport::agent::service
