#include "hostnet/netlink_host_network.h"

#include <fcntl.h>
#include <linux/netlink.h>
#include <linux/rtnetlink.h>
#include <net/if.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "common/identifiers.h"
#include "common/unique_fd.h"
#include "hostnet/conntrack_message.h"
#include "hostnet/route_message.h"
#include "netlink/socket.h"

namespace hostport::hostnet {

using netlink::NetlinkSocket;
namespace {

Result<void> writeSysctl(const std::string& path, std::string_view value) {
  UniqueFd fd(::open(path.c_str(), O_WRONLY | O_CLOEXEC | O_NOFOLLOW));
  if (!fd.valid()) {
    const int error = errno;
    return failSystem(ErrorCode::kKernel, "cannot open " + path + " for writing", error);
  }
  // A sysctl write is one write(2); a short write means the kernel took only part of it.
  ssize_t written = -1;
  do {
    written = ::write(fd.get(), value.data(), value.size());
  } while (written < 0 && errno == EINTR);
  if (written < 0) {
    const int error = errno;
    return failSystem(ErrorCode::kKernel, "cannot write \"" + std::string(value) + "\" to " + path,
                      error);
  }
  if (static_cast<size_t>(written) != value.size()) {
    return fail(ErrorCode::kKernel, "short write of \"" + std::string(value) + "\" to " + path);
  }
  return {};
}

/// UDP entries of one family whose original destination port is one of `ports`, in one dump:
/// the kernel is asked to filter (to the port when there is one, to UDP when there are several),
/// and the entries are filtered again here (see conntrack_message.h).
/// `ports` sorted, each once: a repair's restore flushes thousands at once.
Result<std::vector<ConntrackEntry>> dumpUdpToPorts(NetlinkSocket& socket, Family family,
                                                   const std::vector<uint16_t>& ports) {
  std::vector<ConntrackEntry> matches;
  const auto collect = [&](std::span<const std::byte> message) -> Result<void> {
    HOSTPORT_TRY(ConntrackEntry entry, parseConntrackMessage(message));
    if (isUdpToPort(entry, entry.origDstPort) &&
        std::ranges::binary_search(ports, entry.origDstPort)) {
      matches.push_back(std::move(entry));
    }
    return {};
  };
  constexpr std::size_t kPortsNamed = 8;
  std::string listed;
  for (std::size_t i = 0; i < std::min(ports.size(), kPortsNamed); ++i) {
    listed += (listed.empty() ? "" : ",") + std::to_string(ports[i]);
  }
  if (ports.size() > kPortsNamed) {
    listed += " and " + std::to_string(ports.size() - kPortsNamed) + " more";
  }
  const std::string what =
      "dump " + std::string(familyName(family)) + " conntrack entries for udp port(s) " + listed;

  auto filtered =
      ports.size() == 1 ? buildConntrackDump(family, ports.front()) : buildUdpConntrackDump(family);
  HOSTPORT_TRY(const int status,
               socket.requestAccepting(filtered, what, {EINVAL, EOPNOTSUPP}, collect));
  if (status == 0) return matches;

  // The kernel knows CTA_FILTER but refused this use of it: read the whole table instead.
  matches.clear();
  auto full = buildConntrackDump(family);
  HOSTPORT_TRY_VOID(socket.request(full, what, collect));
  return matches;
}

}  // namespace

Result<std::unique_ptr<NetlinkHostNetwork>> NetlinkHostNetwork::create(std::string procSysNet) {
  return std::unique_ptr<NetlinkHostNetwork>(new NetlinkHostNetwork(std::move(procSysNet)));
}

Result<void> NetlinkHostNetwork::enableRouteLocalnet(std::span<const IpAddress> podIps) {
  for (const IpAddress& podIp : podIps) {
    if (podIp.family() != Family::kIPv4) {
      return fail(ErrorCode::kInvalidArgument, "route_localnet is IPv4 only, got " + podIp.str());
    }
  }
  if (podIps.empty()) return {};
  HOSTPORT_TRY(NetlinkSocket * socket, routeSocket());
  std::vector<uint32_t> interfaces;
  for (const IpAddress& podIp : podIps) {
    const std::string what = "route lookup for " + podIp.str();
    auto request = buildRouteGet(podIp);
    std::optional<uint32_t> oif;
    HOSTPORT_TRY_VOID(
        socket->request(request, what, [&](std::span<const std::byte> message) -> Result<void> {
          HOSTPORT_TRY(oif, parseRouteOutputInterface(message));
          return {};
        }));
    if (!oif) return fail(ErrorCode::kKernel, what + ": the kernel acknowledged without a route");
    if (std::ranges::find(interfaces, *oif) == interfaces.end()) interfaces.push_back(*oif);
  }
  for (const uint32_t oif : interfaces) {
    char name[IF_NAMESIZE] = {};
    if (if_indextoname(oif, name) == nullptr) {
      const int error = errno;
      return failSystem(ErrorCode::kKernel,
                        "route_localnet: no name for interface index " + std::to_string(oif),
                        error);
    }
    // Checked again because the name becomes a path component.
    if (!isKernelIfname(name)) {
      return fail(
          ErrorCode::kKernel,
          "route_localnet: refusing unexpected interface name for index " + std::to_string(oif));
    }
    HOSTPORT_TRY_VOID(writeSysctl(routeLocalnetPath(procSysNet_, name), "1"));
  }
  return {};
}

Result<NetlinkSocket*> NetlinkHostNetwork::routeSocket() {
  if (!route_ || route_->poisoned()) {
    HOSTPORT_TRY(NetlinkSocket opened, NetlinkSocket::open(NETLINK_ROUTE));
    route_.emplace(std::move(opened));
  }
  return &*route_;
}

Result<bool> NetlinkHostNetwork::isLocalAddress(const IpAddress& address) {
  auto request = buildRouteGet(address);
  HOSTPORT_TRY(NetlinkSocket * socket, routeSocket());
  const std::string what = "route lookup for " + address.str();
  std::optional<RouteReply> reply;
  // No route at all (unreachable, prohibited, a family the netns has no address of) is no local
  // address either: local routes are the kernel's own, there whenever the address is.
  HOSTPORT_TRY(
      const int status,
      socket->requestAccepting(request, what, {ENETUNREACH, EHOSTUNREACH, EACCES, EAFNOSUPPORT},
                               [&](std::span<const std::byte> message) -> Result<void> {
                                 HOSTPORT_TRY(reply, parseRouteReply(message));
                                 return {};
                               }));
  if (status != 0) return false;
  if (!reply) return fail(ErrorCode::kKernel, what + ": the kernel acknowledged without a route");
  return reply->type == RTN_LOCAL;
}

Result<int> NetlinkHostNetwork::flushUdpConntrack(const std::vector<uint16_t>& requested) {
  if (requested.empty()) return 0;
  if (std::ranges::find(requested, 0) != requested.end()) {
    return fail(ErrorCode::kInvalidArgument, "cannot flush conntrack for port 0");
  }
  std::vector<uint16_t> ports = requested;
  std::ranges::sort(ports);
  ports.erase(std::ranges::unique(ports).begin(), ports.end());
  HOSTPORT_TRY(NetlinkSocket socket, NetlinkSocket::open(NETLINK_NETFILTER));

  int deleted = 0;
  for (const Family family : {Family::kIPv4, Family::kIPv6}) {
    // Collect first, delete after: a request sent while a dump is still streaming on the same
    // socket would interleave with it.
    HOSTPORT_TRY(const auto entries, dumpUdpToPorts(socket, family, ports));
    for (const ConntrackEntry& entry : entries) {
      HOSTPORT_TRY(auto request, buildConntrackDelete(entry));
      // ENOENT: the entry expired, or its tuple now belongs to a newer flow (CTA_ID differs).
      HOSTPORT_TRY(
          const int status,
          socket.requestAccepting(request, "delete conntrack entry " + entry.describe(), {ENOENT}));
      if (status == 0) ++deleted;
    }
  }
  return deleted;
}

}  // namespace hostport::hostnet
