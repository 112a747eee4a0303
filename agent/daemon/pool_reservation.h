#pragma once
// The pools' ports kept out of the kernel's ephemeral range at start (hostnet/reserved_ports.h),
// so a host client's connect() is never given a port the allocator may hand to a pod.

#include <string>
#include <vector>

#include "agent/core/allocator.h"
#include "hostnet/reserved_ports.h"

namespace hostport::agent::daemon {

/// Adds every pool range to net.ipv4.ip_local_reserved_ports at `procPath` (by default, of the
/// calling thread's netns) and logs socket.ports_reserved with the ranges added.
Result<void> reservePoolPorts(const std::vector<core::PoolSpec>& pools,
                              const std::string& procPath = hostnet::localReservedPortsPath());

}  // namespace hostport::agent::daemon
