#pragma once
// HostNetwork over netlink and the net sysctls under a root directory (proc_sys_net.h,
// /proc/sys/net by default), in the calling thread's network namespace.
//
// Design note: no socket is opened in create(). A netlink socket belongs to the netns of the
// thread that opened it, and callers (the plugin, tests entering a netns on one thread) expect
// each call to act on the netns they are in at call time; so every call opens its own sockets.
// That costs a few syscalls per pod, nothing next to the ruleset transaction.

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <utility>

#include "common/error.h"
#include "common/ip_address.h"
#include "hostnet/host_network.h"
#include "hostnet/proc_sys_net.h"
#include "netlink/socket.h"

namespace hostport::hostnet {

/// The real HostNetwork: RTM_GETROUTE + <procSysNet>/ipv4/conf for route_localnet, ctnetlink for
/// conntrack, RTM_GETROUTE for local addresses.
class NetlinkHostNetwork final : public HostNetwork {
 public:
  /// `procSysNet`: where the net sysctls are (the agent's procSysNet; the plugin, on the host,
  /// keeps the default).
  static Result<std::unique_ptr<NetlinkHostNetwork>> create(
      std::string procSysNet = std::string(kDefaultProcSysNet));

  using HostNetwork::enableRouteLocalnet;
  Result<void> enableRouteLocalnet(std::span<const IpAddress> podIps) override;
  Result<int> flushUdpConntrack(const std::vector<uint16_t>& ports) override;
  Result<bool> isLocalAddress(const IpAddress& address) override;

 private:
  explicit NetlinkHostNetwork(std::string procSysNet) : procSysNet_(std::move(procSysNet)) {}
  /// The route socket, opened at the first lookup and kept (again after a request that went
  /// wrong): an agent ADD looks routes up twice, and opening a socket for each cost more than the
  /// lookup. Used one call at a time (the agent's writer lock; the plugin is one thread).
  Result<netlink::NetlinkSocket*> routeSocket();

  std::string procSysNet_;
  std::optional<netlink::NetlinkSocket> route_;
};

}  // namespace hostport::hostnet
