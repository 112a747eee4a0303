#pragma once
// Pure builders and parsers for the NETLINK_SOCK_DIAG exchange that lists bound host sockets
// (what `ss -ltun` prints). No socket here (katran style); tested byte by byte in
// tests/unit/hostnet/sock_diag_message_test.cc.
//
// Design note -- which sockets count as "bound" (boundStateMask()):
// The question the agent asks is "can a pod's DNAT'd host port and a host process collide?". A
// DNAT rule steals every new flow to nodeIP:port, so what collides is a host socket that expects
// new flows on that port:
// - TCP LISTEN: yes, the obvious case.
// - TCP connections (ESTABLISHED, SYN_SENT, TIME_WAIT, ...): no. Accepted connections share their
//   listener's port, which is already covered. Client sockets hold an ephemeral port; replies to
//   them match their own conntrack entry and are never DNAT'd, and ip_local_reserved_ports keeps
//   new ones out of the pools. Counting them would mark ports busy at random, for nothing.
// - TCP bound but not listening (bind() done, listen() not yet): off by default, opt-in. Such a
//   socket holds the port in the bind table, but it receives nothing until it listens, and a
//   server's bind()-to-listen() window is microseconds: a snapshot almost never sees one. The
//   kernel reports them only for the pseudo-state TCP_BOUND_INACTIVE (Linux >= 6.10, "tcp: Dump
//   bound-only sockets in inet_diag"; older kernels ignore the bit), and asking for any state
//   but LISTEN makes it walk its global established and bind hash tables: measured 1.6 ms per
//   family on a 24 GB VM (the tables grow with RAM), against ~20 us for a listener-only dump.
//   Worth it for a one-off check of a static claim, not for every allocation.
// - UDP, every state: a bound UDP socket has no "listening" state (unconnected sockets show as
//   CLOSE), and a connected one still receives on its port. This includes the kernel's own
//   tunnel sockets (VXLAN, WireGuard, ...), which have no inode.
// - SCTP LISTEN: endpoints that accept associations. Kernels without SCTP (or without sctp_diag)
//   refuse the dump; the caller treats that as "no SCTP sockets".
//
// Design note -- the port filter (buildPortFilter()):
// The kernel walks its whole hash tables for a dump whatever we ask, but it formats and copies
// only the sockets that pass an INET_DIAG_REQ_BYTECODE program. The agent checks ports of its
// pools only, so it asks for those: on a node with thousands of sockets elsewhere the reply shrinks
// to the few in the pools. The program is an OR of "sport >= first && sport <= last" blocks, laid
// out the way ss(8) compiles "or" (block, JMP-to-accept, block, ...) because the kernel's audit
// only accepts jumps that land on the chain of "yes" branches. TCP and UDP apply it; sctp_diag
// does not, so an SCTP dump may still bring sockets outside the spans (they are real, and kept).

#include <array>
#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "common/error.h"
#include "common/ip_address.h"
#include "common/protocol.h"

namespace hostport::hostnet {

/// The kernel's TCP state numbers as inet_diag reports them (include/net/tcp_states.h is not a
/// uapi header, but the values are ABI: ss relies on them).
inline constexpr uint8_t kTcpEstablished = 1;
inline constexpr uint8_t kTcpClose = 7;
inline constexpr uint8_t kTcpListen = 10;
inline constexpr uint8_t kTcpBoundInactive = 13;  // pseudo-state, Linux >= 6.10

/// An inclusive range of local ports.
struct PortSpan {
  uint16_t first = 0;
  uint16_t last = 0;
  friend bool operator==(const PortSpan&, const PortSpan&) = default;
};

/// Spans past this many (after merging) are not worth a program: dump every port instead.
inline constexpr std::size_t kMaxFilterSpans = 256;

/// One socket from a sock_diag dump, as far as port verification cares.
struct BoundSocket {
  Protocol protocol = Protocol::kTcp;
  uint8_t state = 0;   // idiag_state (kTcpListen, kTcpClose, ...)
  IpAddress address;   // local address
  uint16_t port = 0;   // local port
  uint32_t inode = 0;  // 0 for sockets without a file (kernel tunnel sockets)
  uint32_t uid = 0;

  Family family() const { return address.family(); }

  /// "tcp 127.0.0.1:8080 (inode 1234, uid 0)", for error messages and logs.
  std::string describe() const;
  friend bool operator==(const BoundSocket&, const BoundSocket&) = default;
};

/// The idiag_states bit mask of the sockets that count as bound for `protocol` (see the design
/// note). `boundOnlyTcp` adds TCP sockets that are bound but not listening.
uint32_t boundStateMask(Protocol protocol, bool boundOnlyTcp = false);

/// `spans` sorted, with overlapping and adjacent spans merged (and first > last swapped).
std::vector<PortSpan> normalizedSpans(std::vector<PortSpan> spans);

/// The INET_DIAG_REQ_BYTECODE program (without its attribute header) that accepts a socket whose
/// local port lies in one of `spans` (normalized first). Empty when no filter is needed or
/// possible: no spans, a span of every port, or more than kMaxFilterSpans spans.
std::vector<std::byte> buildPortFilter(std::span<const PortSpan> spans);

/// A SOCK_DIAG_BY_FAMILY dump request (NLM_F_REQUEST | NLM_F_DUMP, inet_diag_req_v2) for one
/// family and protocol, asking for the states in `states` and no extensions (small replies).
/// A non-empty `portFilter` (from buildPortFilter()) is attached as INET_DIAG_REQ_BYTECODE.
std::vector<std::byte> buildSockDiagDump(Family family, Protocol protocol, uint32_t states,
                                         std::span<const std::byte> portFilter = {});

/// The same dump for TCP in the older TCPDIAG_GETSOCK form (inet_diag_req), which covers both
/// families in one request: the kernel walks its listening hash table once instead of once per
/// family (a walk of every bucket, ~16k on a 24 GB node, whatever the number of sockets).
std::vector<std::byte> buildTcpDumpBothFamilies(uint32_t states,
                                                std::span<const std::byte> portFilter = {});

/// Parses one SOCK_DIAG_BY_FAMILY (or TCPDIAG_GETSOCK) reply message (inet_diag_msg plus
/// attributes) of a dump that asked for `protocol` (inet_diag_msg itself does not carry it). Fails
/// cleanly on truncated or malformed bytes; never reads outside `message`.
Result<BoundSocket> parseSockDiagMessage(std::span<const std::byte> message, Protocol protocol);

}  // namespace hostport::hostnet
