#pragma once
// A point-in-time view of the host's bound sockets (TCP listeners, bound UDP, listening SCTP, and
// on request bound-only TCP; IPv4 and IPv6), for checking candidate host ports against reality.
//
// Design note:
// - One snapshot per allocation request: about 0.7 ms for a thousand sockets (median, measured by
//   tests/netns/hostnet_sockets_netns_test.cc on a loaded 2-vCPU VM; nearly all of it is the
//   kernel filling ~0.5 us per socket), and then every candidate port is an O(1) lookup, so a
//   request that skips many busy ports still pays for one dump only.
// - "Bound" ignores the address: a pod's host port is DNAT'd for every node address, so a host
//   socket on 127.0.0.1:P or [::1]:P collides with it just as much as one on *:P.
// - Which states count as bound is decided in sock_diag_message.h (see its design note).
// - The snapshot is taken in the netns of the calling thread (the netlink socket binds there).

#include <cstddef>
#include <cstdint>
#include <optional>
#include <unordered_map>
#include <vector>

#include "common/error.h"
#include "hostnet/sock_diag_message.h"

namespace hostport::hostnet {

struct SnapshotOptions {
  /// Also count TCP sockets that are bound but not listening (reported by Linux >= 6.10). Off by
  /// default: it adds a walk of the kernel's global TCP hash tables, about 1.6 ms per family on
  /// a 24 GB node and more on bigger ones, whatever the number of sockets (sock_diag_message.h).
  bool includeBoundOnlyTcp = false;
};

/// The bound sockets of one network namespace at one moment, indexed by (protocol, port).
class SocketTable {
 public:
  /// Dumps tcp, udp and sctp sockets of both families in the calling thread's netns. A kernel
  /// without SCTP counts as "no SCTP sockets"; any other refusal is an Error{kKernel}.
  static Result<SocketTable> snapshot(const SnapshotOptions& options = {});

  /// A table over `sockets` (for tests and for callers that filter a dump). Sockets of other
  /// protocols, and with port 0, are kept in sockets() but never count as bound.
  static SocketTable fromSockets(std::vector<BoundSocket> sockets);

  /// Whether any socket of `protocol` (IPPROTO_*) holds `port`, on any address of either family.
  bool isBound(uint8_t protocol, uint16_t port) const;

  /// The inode of a socket holding (protocol, port): one with a file when there is one, else 0
  /// (a kernel socket such as a VXLAN or WireGuard tunnel). nullopt when the port is not bound.
  std::optional<uint32_t> inodeOf(uint8_t protocol, uint16_t port) const;

  /// The socket inodeOf() speaks for (address, uid, state for an error message); nullptr when
  /// the port is not bound. Valid as long as this table.
  const BoundSocket* find(uint8_t protocol, uint16_t port) const;

  /// The number of sockets in the snapshot (not of distinct ports).
  std::size_t size() const { return sockets_.size(); }
  const std::vector<BoundSocket>& sockets() const { return sockets_; }

 private:
  SocketTable() = default;

  std::vector<BoundSocket> sockets_;
  // One bit per port for each of kBoundSocketProtocols: 3 x 8 KiB, in one heap block so a table
  // moves cheaply.
  std::vector<uint64_t> bits_;
  // (protocol index << 16 | port) -> index into sockets_ of the representative socket.
  std::unordered_map<uint32_t, uint32_t> holders_;
};

}  // namespace hostport::hostnet
