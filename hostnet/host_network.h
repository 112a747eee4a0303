#pragma once
// Kernel side effects of a port forward outside nftables. `HostNetwork` is the seam tests fake;
// NetlinkHostNetwork (netlink_host_network.h) talks to the kernel of the calling thread's netns.

#include <cstdint>
#include <span>
#include <vector>

#include "common/error.h"
#include "common/ip_address.h"

namespace hostport::hostnet {

class HostNetwork {
 public:
  virtual ~HostNetwork() = default;

  /// Sets net.ipv4.conf.<dev>.route_localnet=1 on each interface the kernel routes one of `podIps`
  /// through, so traffic to 127.0.0.1:hostPort can be DNATed to the pod. IPv4 only. Each
  /// interface is written once however many pods it serves: a repair restores thousands at once.
  virtual Result<void> enableRouteLocalnet(std::span<const IpAddress> podIps) = 0;
  Result<void> enableRouteLocalnet(const IpAddress& podIp) {
    return enableRouteLocalnet(std::span(&podIp, 1));
  }

  /// Deletes UDP conntrack entries (IPv4 and IPv6) whose original destination port is one of
  /// `ports`, so a stale flow does not keep a new mapping's packets away from the pod. Returns
  /// how many entries were deleted. Each dump walks the whole conntrack table (hundreds of
  /// thousands of entries on a busy node), so the ports go together: one walk per family.
  virtual Result<int> flushUdpConntrack(const std::vector<uint16_t>& ports) = 0;

  /// True when the kernel routes `address` as local (`ip route get` says "local"): the node
  /// takes traffic to it itself (an address of any interface, 127.0.0.0/8, an AnyIP route), so
  /// a DNAT to it reaches the node's own services, never a pod. False when it has no route.
  virtual Result<bool> isLocalAddress(const IpAddress& address) = 0;
};

}  // namespace hostport::hostnet
