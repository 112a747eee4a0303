#pragma once
// A point-in-time view of the host's bound sockets (TCP listeners, bound UDP, listening SCTP, and
// on request bound-only TCP; IPv4 and IPv6), for checking candidate host ports against reality.
//
// Design note:
// - One snapshot per allocation request, then every candidate port is a lookup, so a request that
//   skips many busy ports still pays for one dump per protocol and family only. A dump costs
//   about 0.7 ms for a thousand sockets (tests/netns/hostnet_sockets_netns_test.cc, loaded
//   2-vCPU VM; nearly all of it the kernel filling ~0.5 us per socket), so callers narrow it:
//   only the protocols a request needs, only the ports of the pools (a kernel-side filter, see
//   sock_diag_message.h), over a netlink socket kept open (NetlinkSocketPool).
// - A narrowed table knows only what it asked for: covers() says which (protocol, port) it can
//   answer, and isBound() outside that is "not known to be bound", not "free".
// - "Bound" ignores the address: a pod's host port is DNAT'd for every node address, so a host
//   socket on 127.0.0.1:P or [::1]:P collides with it just as much as one on *:P.
// - Which states count as bound is decided in sock_diag_message.h (see its design note).
// - The snapshot is taken in the netns of the netlink socket: the calling thread's one for the
//   overload that opens its own.

#include <cstddef>
#include <cstdint>
#include <optional>
#include <utility>
#include <vector>

#include "common/error.h"
#include "hostnet/sock_diag_message.h"

namespace hostport::netlink {
class NetlinkSocket;
class NetlinkSocketPool;
}  // namespace hostport::netlink

namespace hostport::hostnet {

struct SnapshotOptions {
  /// Also count TCP sockets that are bound but not listening (reported by Linux >= 6.10). Off by
  /// default: it adds a walk of the kernel's global TCP hash tables, about 1.6 ms per family on
  /// a 24 GB node and more on bigger ones, whatever the number of sockets (sock_diag_message.h).
  bool includeBoundOnlyTcp = false;
  /// The protocols to dump; empty: all of them.
  std::vector<Protocol> protocols;
  /// The local ports to ask the kernel for; empty: every port.
  std::vector<PortSpan> ports;
};

/// The bound sockets of one network namespace at one moment, indexed by (protocol, port).
class SocketTable {
 public:
  /// Dumps the sockets of `options` (by default tcp, udp and sctp, every port) of both families
  /// in the calling thread's netns. A kernel without SCTP counts as "no SCTP sockets"; any other
  /// refusal is an Error{kKernel}.
  static Result<SocketTable> snapshot(const SnapshotOptions& options = {});

  /// The same over `socket`, an open NETLINK_SOCK_DIAG socket (its netns is the one dumped). After
  /// an error the socket may hold the rest of a reply: close it rather than reuse it.
  static Result<SocketTable> snapshot(netlink::NetlinkSocket& socket,
                                      const SnapshotOptions& options);

  /// The same over a socket on loan from `sockets`, which goes back to the pool after a
  /// snapshot and is closed after a failure.
  static Result<SocketTable> snapshot(netlink::NetlinkSocketPool& sockets,
                                      const SnapshotOptions& options);

  /// A table over `sockets` that covers every port of every protocol (for tests and for callers
  /// that filter a dump). Sockets with port 0 are kept in sockets() but never count as bound.
  static SocketTable fromSockets(std::vector<BoundSocket> sockets);

  /// Whether this table can answer for (protocol, port): the protocol was dumped and the port was
  /// inside the dump's port filter.
  bool covers(Protocol protocol, uint16_t port) const;

  /// Whether any socket of `protocol` holds `port`, on any address of either family.
  bool isBound(Protocol protocol, uint16_t port) const;

  /// The inode of a socket holding (protocol, port): one with a file when there is one, else 0
  /// (a kernel socket such as a VXLAN or WireGuard tunnel). nullopt when the port is not bound.
  std::optional<uint32_t> inodeOf(Protocol protocol, uint16_t port) const;

  /// The socket inodeOf() speaks for (address, uid, state for an error message); nullptr when
  /// the port is not bound. Valid as long as this table.
  const BoundSocket* find(Protocol protocol, uint16_t port) const;

  /// The number of sockets in the snapshot (not of distinct ports).
  std::size_t size() const { return sockets_.size(); }
  const std::vector<BoundSocket>& sockets() const { return sockets_; }

 private:
  SocketTable() = default;

  std::vector<BoundSocket> sockets_;
  // (protocol << 16 | port, index into sockets_ of the representative socket), sorted by key, one
  // entry per key. A sorted vector rather than per-port bitmaps: a narrowed dump holds a handful
  // of sockets, and clearing 24 KiB of bitmaps per request cost more than the lookups.
  std::vector<std::pair<uint32_t, uint32_t>> holders_;
  ProtocolSet coveredProtocols_;        // the protocols dumped
  std::vector<PortSpan> coveredPorts_;  // normalized; empty: every port
};

}  // namespace hostport::hostnet
