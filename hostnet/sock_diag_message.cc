#include "hostnet/sock_diag_message.h"

#include <arpa/inet.h>
#include <linux/inet_diag.h>
#include <linux/netlink.h>
#include <linux/sock_diag.h>
#include <netinet/in.h>
#include <sys/socket.h>

#include <algorithm>
#include <cstring>

#include "netlink/attributes.h"
#include "netlink/writer.h"

namespace hostport::hostnet {

using netlink::Bytes;
using netlink::forEachAttribute;
using netlink::messageBytes;
using netlink::NetlinkWriter;
using netlink::readStruct;
namespace {

static_assert(sizeof(inet_diag_req_v2) == 56, "inet_diag_req_v2 is ABI");
static_assert(sizeof(inet_diag_req) == 60, "inet_diag_req is ABI");
static_assert(sizeof(inet_diag_msg) == 72, "inet_diag_msg is ABI");
static_assert(sizeof(inet_diag_bc_op) == 4, "inet_diag_bc_op is ABI");

constexpr uint32_t stateBit(uint8_t state) { return 1u << state; }

std::unexpected<Error> malformed(const std::string& why) {
  return fail(ErrorCode::kDecode, "malformed sock_diag message: " + why);
}

/// A dump request: header, `request` (inet_diag_req or _v2), and the filter as an attribute.
template <typename Request>
std::vector<std::byte> dumpMessage(uint16_t type, const Request& request,
                                   std::span<const std::byte> portFilter) {
  NetlinkWriter writer;
  writer.beginMessage(type, NLM_F_REQUEST | NLM_F_DUMP, request);
  if (!portFilter.empty()) writer.attribute(INET_DIAG_REQ_BYTECODE, portFilter);
  writer.endMessage();
  return writer.take();
}

}  // namespace

std::string BoundSocket::describe() const {
  return std::string(protocolName(protocol)) + " " + describeEndpoint(address, port) + " (inode " +
         std::to_string(inode) + ", uid " + std::to_string(uid) + ")";
}

uint32_t boundStateMask(Protocol protocol, bool boundOnlyTcp) {
  switch (protocol) {
    case Protocol::kTcp:
      return stateBit(kTcpListen) | (boundOnlyTcp ? stateBit(kTcpBoundInactive) : 0);
    case Protocol::kUdp:
      return ~0u;  // udp_diag matches 1 << sk_state; unconnected sockets are CLOSE
    case Protocol::kSctp:
      return stateBit(kTcpListen);  // sctp_diag reports endpoints under TCPF_LISTEN
  }
  return 0;
}

std::vector<PortSpan> normalizedSpans(std::vector<PortSpan> spans) {
  for (auto& span : spans) {
    if (span.first > span.last) std::swap(span.first, span.last);
  }
  std::ranges::sort(spans, {}, &PortSpan::first);
  std::vector<PortSpan> merged;
  for (const auto& span : spans) {
    if (!merged.empty() && uint32_t{span.first} <= uint32_t{merged.back().last} + 1) {
      merged.back().last = std::max(merged.back().last, span.last);
    } else {
      merged.push_back(span);
    }
  }
  return merged;
}

std::vector<std::byte> buildPortFilter(std::span<const PortSpan> spans) {
  const auto merged = normalizedSpans({spans.begin(), spans.end()});
  if (merged.empty() || merged.size() > kMaxFilterSpans) return {};
  if (merged.front().first == 0 && merged.front().last == 65535) return {};

  // Per span a 16-byte block: S_GE first (port in the next op's `no`), S_LE last. Between blocks
  // a 4-byte JMP whose `no` lands exactly at the end (accept). A failed comparison jumps to the
  // next block, or 4 bytes past the end for the last one (reject). Offsets are relative to the
  // op that jumps; `yes` continues with the next op.
  constexpr uint16_t kBlock = 4 * sizeof(inet_diag_bc_op);  // 16
  constexpr uint16_t kJump = sizeof(inet_diag_bc_op);       // 4
  const std::size_t total = merged.size() * kBlock + (merged.size() - 1) * kJump;
  std::vector<inet_diag_bc_op> ops;
  ops.reserve(total / sizeof(inet_diag_bc_op));
  for (std::size_t i = 0; i < merged.size(); ++i) {
    ops.push_back({INET_DIAG_BC_S_GE, 8, kBlock + kJump});
    ops.push_back({0, 0, merged[i].first});
    ops.push_back({INET_DIAG_BC_S_LE, 8, kBlock + kJump - 8});
    ops.push_back({0, 0, merged[i].last});
    if (i + 1 < merged.size()) {
      const std::size_t here = ops.size() * sizeof(inet_diag_bc_op);
      ops.push_back({INET_DIAG_BC_JMP, kJump, static_cast<uint16_t>(total - here)});
    }
  }
  std::vector<std::byte> program(total);
  std::memcpy(program.data(), ops.data(), total);
  return program;
}

std::vector<std::byte> buildSockDiagDump(Family family, Protocol protocol, uint32_t states,
                                         std::span<const std::byte> portFilter) {
  inet_diag_req_v2 request{};  // zero id: no address or port filter, any interface
  request.sdiag_family = family == Family::kIPv4 ? AF_INET : AF_INET6;
  request.sdiag_protocol = ipProtocolNumber(protocol);
  request.idiag_ext = 0;  // no extensions: about 100 bytes per socket instead of ~300
  request.idiag_states = states;
  return dumpMessage(SOCK_DIAG_BY_FAMILY, request, portFilter);
}

std::vector<std::byte> buildTcpDumpBothFamilies(uint32_t states,
                                                std::span<const std::byte> portFilter) {
  inet_diag_req request{};  // the kernel dumps both families whatever idiag_family says
  request.idiag_family = AF_INET;
  request.idiag_ext = 0;
  request.idiag_states = states;
  return dumpMessage(TCPDIAG_GETSOCK, request, portFilter);
}

Result<BoundSocket> parseSockDiagMessage(std::span<const std::byte> message, Protocol protocol) {
  const auto bytes = messageBytes(message);
  if (!bytes) return malformed("truncated netlink header or bad nlmsg_len");
  const auto header = readStruct<nlmsghdr>(*bytes);
  // TCPDIAG_GETSOCK: the kernel answers a compat dump in the request's own type.
  const bool compatTcp = header->nlmsg_type == TCPDIAG_GETSOCK && protocol == Protocol::kTcp;
  if (header->nlmsg_type != SOCK_DIAG_BY_FAMILY && !compatTcp) {
    return malformed("unexpected message type " + std::to_string(header->nlmsg_type));
  }
  const Bytes body = bytes->subspan(NLMSG_HDRLEN);
  const auto diag = readStruct<inet_diag_msg>(body);
  if (!diag) return malformed("truncated inet_diag_msg");

  Family family = Family::kIPv4;
  if (diag->idiag_family == AF_INET) {
    family = Family::kIPv4;
  } else if (diag->idiag_family == AF_INET6) {
    family = Family::kIPv6;
  } else {
    return malformed("unsupported family " + std::to_string(diag->idiag_family));
  }

  // Attributes are optional (we ask for no extensions), but when present they must be well
  // formed, and a protocol attribute must agree with what the dump asked for.
  std::string problem;
  const Bytes attributes = body.subspan(std::min(body.size(), NLMSG_ALIGN(sizeof(inet_diag_msg))));
  const bool ok = forEachAttribute(attributes, [&](uint16_t type, Bytes payload) {
    if (type != INET_DIAG_PROTOCOL) return true;
    if (payload.size() != 1) {
      problem = "INET_DIAG_PROTOCOL is not one byte";
      return false;
    }
    if (std::to_integer<uint8_t>(payload[0]) != ipProtocolNumber(protocol)) {
      problem = "reply for protocol " + std::to_string(std::to_integer<int>(payload[0])) +
                " in a dump of protocol " + std::to_string(ipProtocolNumber(protocol));
      return false;
    }
    return true;
  });
  if (!ok) return malformed(problem.empty() ? "bad attribute length" : problem);

  BoundSocket socket;
  socket.protocol = protocol;
  socket.state = diag->idiag_state;
  // idiag_src is four 32-bit words in network order; IPv4 uses the first.
  socket.address = *IpAddress::fromBytes(
      family, {reinterpret_cast<const uint8_t*>(diag->id.idiag_src), addressSize(family)});
  socket.port = ntohs(diag->id.idiag_sport);
  socket.inode = diag->idiag_inode;
  socket.uid = diag->idiag_uid;
  return socket;
}

}  // namespace hostport::hostnet
