#pragma once
// HostNetwork over netlink (libmnl) and /proc/sys, in the calling thread's network namespace.
//
// Design note: no socket is opened in create(). A netlink socket belongs to the netns of the
// thread that opened it, and callers (the plugin, tests entering a netns on one thread) expect
// each call to act on the netns they are in at call time; so every call opens its own sockets.
// That costs a few syscalls per pod, nothing next to the ruleset transaction.

#include <cstdint>
#include <memory>

#include "common/error.h"
#include "common/ip_address.h"
#include "hostnet/host_network.h"

namespace hostport::hostnet {

/// The real HostNetwork: RTM_GETROUTE + /proc/sys for route_localnet, ctnetlink for conntrack.
class NetlinkHostNetwork final : public HostNetwork {
 public:
  static Result<std::unique_ptr<NetlinkHostNetwork>> create();

  Result<void> enableRouteLocalnet(const IpAddress& podIp) override;
  Result<int> flushUdpConntrack(uint16_t port) override;

 private:
  NetlinkHostNetwork() = default;
};

}  // namespace hostport::hostnet
