#pragma once
// What each pool can still give, as the scheduler should count it (issue 13 §3): the pool's size
// minus the ports a host process holds. The agent's own leases are not subtracted: the scheduler
// deducts the `hostport.io/<pool>` requests of the pods it placed, and those pods hold the leases.
// A port counts as held when a host socket binds it in any protocol the pool serves: a pod may
// ask for tcpudp. Node pools only: a cluster pool has no resource. Pure over the PortProbe seam.

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "agent/core/allocator.h"

namespace hostport::agent::service {

std::map<std::string, uint64_t> poolCapacities(const std::vector<core::PoolSpec>& pools,
                                               core::PortProbe& probe);

}  // namespace hostport::agent::service
