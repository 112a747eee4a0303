#pragma once
// Pure builder and parser for the one rtnetlink exchange route_localnet needs: "which interface
// does the kernel route this IPv4 address through?" (what `ip route get <addr>` prints as "dev").
// No socket here; tested byte by byte in tests/unit/hostnet/route_message_test.cc.

#include <cstddef>
#include <cstdint>
#include <span>
#include <vector>

#include "common/error.h"
#include "common/ip_address.h"

namespace hostport::hostnet {

/// An RTM_GETROUTE request (NLM_F_REQUEST | NLM_F_ACK) for one IPv4 destination (a /32 RTA_DST).
/// Fails for an IPv6 address.
Result<std::vector<std::byte>> buildRouteGet(const IpAddress& destination);

/// RTA_OIF (the output interface index) from one RTM_NEWROUTE reply. Fails cleanly on truncated
/// or malformed bytes and when the route has no output interface (blackhole, multipath).
Result<uint32_t> parseRouteOutputInterface(std::span<const std::byte> message);

}  // namespace hostport::hostnet
