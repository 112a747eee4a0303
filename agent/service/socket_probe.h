#pragma once
// The allocator's view of the host's sockets: one sock_diag snapshot per allocation request.
//
// Design note:
// - A snapshot is narrowed to what the request can ask about (ProbeScope): the kernel protocols
//   of its rows, and the ports of the pools plus its static claims. A TCP-only request dumps TCP
//   listeners only; the UDP and SCTP dumps it skips walked the host's whole UDP hash table.
// - Taken before the service takes its lock, so the allocator's critical section never waits on
//   the kernel (the sockets are a pool, safe from any thread of the agent's netns).
// - Narrowing is an optimisation, never a hole: a question outside the scope (which the scope's
//   construction rules out) is answered by a full dump of that protocol, taken on the spot. If
//   that dump fails the port counts as bound: the allocator moves on rather than hand it out.
// - The owner's pid and command are looked up (a /proc scan) only for the error message of a
//   static claim.

#include <memory>
#include <optional>
#include <span>
#include <vector>

#include "agent/core/allocator.h"
#include "hostnet/socket_table.h"
#include "netlink/socket_pool.h"

namespace hostport::agent::service {

/// What one request may ask a probe about.
struct ProbeScope {
  std::vector<Protocol> protocols;       // empty: the request has no ports
  std::vector<hostnet::PortSpan> ports;  // normalized
  friend bool operator==(const ProbeScope&, const ProbeScope&) = default;
};

/// The kernel protocols of `request`'s rows, and `poolPorts` plus its static claims' ports.
ProbeScope scopeOf(const AllocationRequest& request, std::span<const hostnet::PortSpan> poolPorts);

/// Every range of every pool, as port spans.
std::vector<hostnet::PortSpan> poolSpans(const std::vector<core::PoolSpec>& pools);

/// PortProbe over a snapshot of the host's sockets narrowed to a ProbeScope.
class SocketTableProbe : public core::PortProbe {
 public:
  /// Takes the snapshot over a socket of `sockets` (NETLINK_SOCK_DIAG, in the netns to check).
  static Result<std::unique_ptr<core::PortProbe>> snapshot(netlink::NetlinkSocketPool& sockets,
                                                           const ProbeScope& scope);
  bool isBound(Protocol protocol, uint16_t port) override;
  core::PortHolder holderOf(Protocol protocol, uint16_t port) override;

 private:
  explicit SocketTableProbe(netlink::NetlinkSocketPool& sockets) : sockets_(sockets) {}
  /// The table that answers for (protocol, port); nullptr when none could be taken.
  const hostnet::SocketTable* tableFor(Protocol protocol, uint16_t port);

  netlink::NetlinkSocketPool& sockets_;
  // The scoped snapshot (none for a request without ports), then any full dump taken for a
  // question out of scope.
  std::vector<hostnet::SocketTable> tables_;
};

/// Makes the SocketTableProbe of each request over one pool of kept-open sock_diag sockets
/// (copyable, for ProbeFactory).
class SocketProbeFactory {
 public:
  /// Opens nothing yet; fails when the calling thread's netns cannot be identified.
  static Result<SocketProbeFactory> create(const std::vector<core::PoolSpec>& pools);
  Result<std::unique_ptr<core::PortProbe>> operator()(const AllocationRequest& request) const;

 private:
  SocketProbeFactory(std::shared_ptr<netlink::NetlinkSocketPool> sockets,
                     std::vector<hostnet::PortSpan> poolPorts)
      : sockets_(std::move(sockets)), poolPorts_(std::move(poolPorts)) {}
  std::shared_ptr<netlink::NetlinkSocketPool> sockets_;
  std::vector<hostnet::PortSpan> poolPorts_;
};

}  // namespace hostport::agent::service
