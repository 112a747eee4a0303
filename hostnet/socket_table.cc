#include "hostnet/socket_table.h"

#include <linux/netlink.h>
#include <netinet/in.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <string>

#include "netlink/socket.h"
#include "netlink/socket_pool.h"

namespace hostport::hostnet {

using netlink::NetlinkSocket;
using netlink::NetlinkSocketPool;
namespace {

uint32_t holderKey(Protocol protocol, uint16_t port) {
  return (static_cast<uint32_t>(protocol) << 16) | port;
}

/// A dump's message handler: parses each reply as a socket of `protocol` and appends it to `out`.
auto collectInto(Protocol protocol, std::vector<BoundSocket>& out) {
  return [protocol, &out](std::span<const std::byte> message) -> Result<void> {
    HOSTPORT_TRY(BoundSocket parsed, parseSockDiagMessage(message, protocol));
    out.push_back(std::move(parsed));
    return {};
  };
}

/// Dumps one (family, protocol) into `out`. SCTP may be missing from the kernel altogether.
Result<void> dumpInto(NetlinkSocket& socket, Family family, Protocol protocol,
                      const SnapshotOptions& options, std::span<const std::byte> portFilter,
                      std::vector<BoundSocket>& out) {
  auto request = buildSockDiagDump(
      family, protocol, boundStateMask(protocol, options.includeBoundOnlyTcp), portFilter);
  const auto what = [&] {
    return "sock_diag dump of " + std::string(familyName(family)) + " " +
           std::string(protocolName(protocol)) + " sockets";
  };
  const auto collect = collectInto(protocol, out);
  if (protocol == Protocol::kSctp) {
    // ENOENT: no sctp_diag handler (and no module to load). EINVAL/EOPNOTSUPP/EPROTONOSUPPORT:
    // older or trimmed kernels. None of them can have an SCTP socket to collide with.
    HOSTPORT_TRY_VOID(socket.requestAccepting(request, "sock_diag dump of sctp sockets",
                                              {ENOENT, EINVAL, EOPNOTSUPP, EPROTONOSUPPORT},
                                              collect));
    return {};
  }
  // The description is built only on failure: this runs for every allocation.
  auto status = socket.requestAccepting(request, "sock_diag dump", {ENOENT}, collect);
  if (!status) return withContext(status.error(), what());
  if (*status == ENOENT) {
    // No tcp_diag/udp_diag handler: nothing can be verified without it, so this stays an error,
    // but one that says what to do.
    Error missing = systemError(ErrorCode::kKernel, what(), ENOENT);
    missing.message += " (is the " + std::string(protocolName(protocol)) + "_diag module loaded?)";
    return std::unexpected(std::move(missing));
  }
  return {};
}

/// Set once a kernel refused the compat TCP dump: then TCP goes per family, like the others.
std::atomic<bool> compatTcpRefused{false};

/// Dumps TCP sockets of both families with one TCPDIAG_GETSOCK request. False (and nothing
/// added) when the kernel does not take that request.
Result<bool> dumpTcpBothFamilies(NetlinkSocket& socket, const SnapshotOptions& options,
                                 std::span<const std::byte> portFilter,
                                 std::vector<BoundSocket>& out) {
  if (compatTcpRefused.load(std::memory_order_relaxed)) return false;
  auto request = buildTcpDumpBothFamilies(
      boundStateMask(Protocol::kTcp, options.includeBoundOnlyTcp), portFilter);
  const std::size_t before = out.size();
  HOSTPORT_TRY(const int status, socket.requestAccepting(request, "sock_diag dump of tcp sockets",
                                                         {EOPNOTSUPP, EINVAL, ENOENT},
                                                         collectInto(Protocol::kTcp, out)));
  if (status != 0) {
    out.resize(before);
    compatTcpRefused = true;
    return false;
  }
  return true;
}

}  // namespace

Result<SocketTable> SocketTable::snapshot(const SnapshotOptions& options) {
  HOSTPORT_TRY(NetlinkSocket socket, NetlinkSocket::open(NETLINK_SOCK_DIAG));
  return snapshot(socket, options);
}

Result<SocketTable> SocketTable::snapshot(NetlinkSocketPool& sockets,
                                          const SnapshotOptions& options) {
  HOSTPORT_TRY(NetlinkSocketPool::Lease socket, sockets.acquire());
  auto table = snapshot(*socket, options);
  if (!table) socket.discard();
  return table;
}

Result<SocketTable> SocketTable::snapshot(NetlinkSocket& socket, const SnapshotOptions& options) {
  ProtocolSet covered;
  for (const Protocol protocol : options.protocols) covered.add(protocol);
  if (options.protocols.empty()) covered = ProtocolSet::all();
  const auto filter = buildPortFilter(options.ports);

  std::vector<BoundSocket> sockets;
  bool tcpDone = false;
  if (covered.contains(Protocol::kTcp)) {
    HOSTPORT_TRY(tcpDone, dumpTcpBothFamilies(socket, options, filter, sockets));
  }
  for (const Family family : {Family::kIPv4, Family::kIPv6}) {
    for (const Protocol protocol : kAllProtocols) {
      if (!covered.contains(protocol)) continue;
      if (tcpDone && protocol == Protocol::kTcp) continue;
      HOSTPORT_TRY_VOID(dumpInto(socket, family, protocol, options, filter, sockets));
    }
  }
  SocketTable table = fromSockets(std::move(sockets));
  table.coveredProtocols_ = covered;
  // A filter the builder declined (too many spans, every port) dumped every port.
  if (!filter.empty()) table.coveredPorts_ = normalizedSpans(options.ports);
  return table;
}

SocketTable SocketTable::fromSockets(std::vector<BoundSocket> sockets) {
  SocketTable table;
  table.sockets_ = std::move(sockets);
  table.coveredProtocols_ = ProtocolSet::all();
  auto& holders = table.holders_;
  holders.reserve(table.sockets_.size());
  for (uint32_t i = 0; i < table.sockets_.size(); ++i) {
    const BoundSocket& socket = table.sockets_[i];
    if (socket.port == 0) continue;
    holders.emplace_back(holderKey(socket.protocol, socket.port), i);
  }
  std::ranges::stable_sort(holders, {}, &std::pair<uint32_t, uint32_t>::first);
  // One entry per key. The first socket with a file speaks for the port: its inode can name a
  // process. A kernel socket (inode 0) speaks only when there is no other.
  std::size_t kept = 0;
  for (std::size_t i = 0; i < holders.size(); ++i) {
    if (kept > 0 && holders[kept - 1].first == holders[i].first) {
      if (table.sockets_[holders[kept - 1].second].inode == 0 &&
          table.sockets_[holders[i].second].inode != 0) {
        holders[kept - 1].second = holders[i].second;
      }
      continue;
    }
    holders[kept++] = holders[i];
  }
  holders.resize(kept);
  return table;
}

bool SocketTable::covers(Protocol protocol, uint16_t port) const {
  if (!coveredProtocols_.contains(protocol)) return false;
  if (coveredPorts_.empty()) return true;
  // The last span that starts at or below `port`.
  const auto after = std::ranges::upper_bound(coveredPorts_, port, {}, &PortSpan::first);
  return after != coveredPorts_.begin() && port <= std::prev(after)->last;
}

bool SocketTable::isBound(Protocol protocol, uint16_t port) const {
  return find(protocol, port) != nullptr;
}

const BoundSocket* SocketTable::find(Protocol protocol, uint16_t port) const {
  if (port == 0) return nullptr;
  const uint32_t key = holderKey(protocol, port);
  const auto it =
      std::ranges::lower_bound(holders_, key, {}, &std::pair<uint32_t, uint32_t>::first);
  return it == holders_.end() || it->first != key ? nullptr : &sockets_[it->second];
}

std::optional<uint32_t> SocketTable::inodeOf(Protocol protocol, uint16_t port) const {
  const BoundSocket* socket = find(protocol, port);
  if (socket == nullptr) return std::nullopt;
  return socket->inode;
}

}  // namespace hostport::hostnet
