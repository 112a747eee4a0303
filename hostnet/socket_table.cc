#include "hostnet/socket_table.h"

#include <linux/netlink.h>
#include <netinet/in.h>

#include <cerrno>
#include <string>
#include <system_error>

#include "hostnet/netlink_socket.h"

namespace hostport::hostnet {
namespace {

constexpr size_t kPortsPerProtocol = 65536;
constexpr size_t kWordsPerProtocol = kPortsPerProtocol / 64;

/// Index of `protocol` in kBoundSocketProtocols, or -1.
int protocolIndex(uint8_t protocol) {
  for (size_t i = 0; i < kBoundSocketProtocols.size(); ++i) {
    if (kBoundSocketProtocols[i] == protocol) return static_cast<int>(i);
  }
  return -1;
}

uint32_t holderKey(int index, uint16_t port) { return (static_cast<uint32_t>(index) << 16) | port; }

/// Dumps one (family, protocol) into `out`. SCTP may be missing from the kernel altogether.
Result<void> dumpInto(NetlinkSocket& socket, Family family, uint8_t protocol,
                      const SnapshotOptions& options, std::vector<BoundSocket>& out) {
  auto request =
      buildSockDiagDump(family, protocol, boundStateMask(protocol, options.includeBoundOnlyTcp));
  const std::string what = "sock_diag dump of " + std::string(familyName(family)) + " " +
                           ipProtocolName(protocol) + " sockets";
  const auto collect = [&](std::span<const std::byte> message) -> Result<void> {
    auto parsed = parseSockDiagMessage(message, protocol);
    if (!parsed) return std::unexpected(std::move(parsed.error()));
    out.push_back(*parsed);
    return {};
  };
  if (protocol == IPPROTO_SCTP) {
    // ENOENT: no sctp_diag handler (and no module to load). EINVAL/EOPNOTSUPP/EPROTONOSUPPORT:
    // older or trimmed kernels. None of them can have an SCTP socket to collide with.
    auto status = socket.requestAccepting(request, what,
                                          {ENOENT, EINVAL, EOPNOTSUPP, EPROTONOSUPPORT}, collect);
    if (!status) return std::unexpected(std::move(status.error()));
    return {};
  }
  auto status = socket.requestAccepting(request, what, {ENOENT}, collect);
  if (!status) return std::unexpected(std::move(status.error()));
  if (*status == ENOENT) {
    // No tcp_diag/udp_diag handler: nothing can be verified without it, so this stays an error,
    // but one that says what to do.
    return fail(ErrorCode::kKernel, what + ": " + std::generic_category().message(ENOENT) +
                                        " (is the " + ipProtocolName(protocol) +
                                        "_diag module loaded?)");
  }
  return {};
}

}  // namespace

Result<SocketTable> SocketTable::snapshot(const SnapshotOptions& options) {
  auto socket = NetlinkSocket::open(NETLINK_SOCK_DIAG);
  if (!socket) return std::unexpected(std::move(socket.error()));
  std::vector<BoundSocket> sockets;
  sockets.reserve(256);
  for (const Family family : {Family::kIPv4, Family::kIPv6}) {
    for (const uint8_t protocol : kBoundSocketProtocols) {
      if (auto result = dumpInto(*socket, family, protocol, options, sockets); !result) {
        return std::unexpected(std::move(result.error()));
      }
    }
  }
  return fromSockets(std::move(sockets));
}

SocketTable SocketTable::fromSockets(std::vector<BoundSocket> sockets) {
  SocketTable table;
  table.sockets_ = std::move(sockets);
  table.bits_.assign(kBoundSocketProtocols.size() * kWordsPerProtocol, 0);
  table.holders_.reserve(table.sockets_.size());
  for (uint32_t i = 0; i < table.sockets_.size(); ++i) {
    const BoundSocket& socket = table.sockets_[i];
    const int index = protocolIndex(socket.protocol);
    if (index < 0 || socket.port == 0) continue;
    table.bits_[static_cast<size_t>(index) * kWordsPerProtocol + socket.port / 64] |=
        uint64_t{1} << (socket.port % 64);
    // The first socket with a file speaks for the port: its inode can name a process. A kernel
    // socket (inode 0) is kept only until one with a file turns up.
    auto [it, inserted] = table.holders_.try_emplace(holderKey(index, socket.port), i);
    if (!inserted && table.sockets_[it->second].inode == 0 && socket.inode != 0) it->second = i;
  }
  return table;
}

bool SocketTable::isBound(uint8_t protocol, uint16_t port) const {
  const int index = protocolIndex(protocol);
  if (index < 0) return false;
  return (bits_[static_cast<size_t>(index) * kWordsPerProtocol + port / 64] >> (port % 64)) & 1u;
}

const BoundSocket* SocketTable::find(uint8_t protocol, uint16_t port) const {
  if (!isBound(protocol, port)) return nullptr;
  const auto it = holders_.find(holderKey(protocolIndex(protocol), port));
  return it == holders_.end() ? nullptr : &sockets_[it->second];
}

std::optional<uint32_t> SocketTable::inodeOf(uint8_t protocol, uint16_t port) const {
  const BoundSocket* socket = find(protocol, port);
  if (socket == nullptr) return std::nullopt;
  return socket->inode;
}

}  // namespace hostport::hostnet
