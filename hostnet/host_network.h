#pragma once
// Kernel side effects of a port forward outside nftables. `HostNetwork` is the seam tests fake;
// NetlinkHostNetwork (netlink_host_network.h) talks to the kernel of the calling thread's netns.

#include <cstdint>

#include "common/error.h"
#include "common/ip_address.h"

namespace hostport::hostnet {

class HostNetwork {
 public:
  virtual ~HostNetwork() = default;

  /// Sets net.ipv4.conf.<dev>.route_localnet=1 on the interface the kernel routes `podIp`
  /// through, so traffic to 127.0.0.1:hostPort can be DNATed to the pod. IPv4 only.
  virtual Result<void> enableRouteLocalnet(const IpAddress& podIp) = 0;

  /// Deletes UDP conntrack entries (IPv4 and IPv6) whose original destination port is `port`,
  /// so a stale flow does not keep a new mapping's packets away from the pod. Returns how many
  /// entries were deleted.
  virtual Result<int> flushUdpConntrack(uint16_t port) = 0;
};

}  // namespace hostport::hostnet
