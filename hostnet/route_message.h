#pragma once
// Pure builder and parser for the one rtnetlink exchange we make, `ip route get <addr>`: which
// interface the kernel routes an address through (route_localnet needs its "dev"), and whether
// the node takes the address itself (route type local: a DNAT target that is the node's own).
// No socket here; tested byte by byte in tests/unit/hostnet/route_message_test.cc.

#include <cstddef>
#include <cstdint>
#include <optional>
#include <span>
#include <vector>

#include "common/error.h"
#include "common/ip_address.h"

namespace hostport::hostnet {

/// An RTM_GETROUTE request (NLM_F_REQUEST | NLM_F_ACK) for one destination (a /32 or /128
/// RTA_DST).
std::vector<std::byte> buildRouteGet(const IpAddress& destination);

/// What one RTM_NEWROUTE reply says about the destination.
struct RouteReply {
  uint8_t type = 0;  // rtm_type: RTN_UNICAST, RTN_LOCAL (the node's own), ...
  std::optional<uint32_t> outputInterface;  // RTA_OIF; none for blackhole, prohibit, multipath
};

/// The reply's route type and output interface. Fails cleanly on truncated or malformed bytes.
Result<RouteReply> parseRouteReply(std::span<const std::byte> message);

/// RTA_OIF (the output interface index) from one RTM_NEWROUTE reply: parseRouteReply(), and
/// kNotFound when the route has no output interface (blackhole, multipath).
Result<uint32_t> parseRouteOutputInterface(std::span<const std::byte> message);

}  // namespace hostport::hostnet
