#include "hostnet/sock_diag_message.h"

#include <arpa/inet.h>
#include <linux/inet_diag.h>
#include <linux/netlink.h>
#include <linux/sock_diag.h>
#include <netinet/in.h>
#include <sys/socket.h>

#include <algorithm>
#include <cstring>

#include "hostnet/netlink_attributes.h"

namespace hostport::hostnet {
namespace {

static_assert(sizeof(inet_diag_req_v2) == 56, "inet_diag_req_v2 is ABI");
static_assert(sizeof(inet_diag_msg) == 72, "inet_diag_msg is ABI");

constexpr uint32_t stateBit(uint8_t state) { return 1u << state; }

std::unexpected<Error> malformed(const std::string& why) {
  return fail(ErrorCode::kDecode, "malformed sock_diag message: " + why);
}

}  // namespace

std::string ipProtocolName(uint8_t protocol) {
  switch (protocol) {
    case IPPROTO_TCP:
      return "tcp";
    case IPPROTO_UDP:
      return "udp";
    case IPPROTO_SCTP:
      return "sctp";
    default:
      return "proto " + std::to_string(protocol);
  }
}

std::string BoundSocket::describe() const {
  char text[INET6_ADDRSTRLEN] = {};
  const bool v4 = family == Family::kIPv4;
  inet_ntop(v4 ? AF_INET : AF_INET6, address.data(), text, sizeof(text));
  const std::string host = v4 ? std::string(text) : "[" + std::string(text) + "]";
  return ipProtocolName(protocol) + " " + host + ":" + std::to_string(port) + " (inode " +
         std::to_string(inode) + ", uid " + std::to_string(uid) + ")";
}

uint32_t boundStateMask(uint8_t protocol, bool boundOnlyTcp) {
  switch (protocol) {
    case IPPROTO_TCP:
      return stateBit(kTcpListen) | (boundOnlyTcp ? stateBit(kTcpBoundInactive) : 0);
    case IPPROTO_UDP:
      return ~0u;  // udp_diag matches 1 << sk_state; unconnected sockets are CLOSE
    case IPPROTO_SCTP:
      return stateBit(kTcpListen);  // sctp_diag reports endpoints under TCPF_LISTEN
    default:
      return 0;
  }
}

std::vector<std::byte> buildSockDiagDump(Family family, uint8_t protocol, uint32_t states) {
  nlmsghdr header{};
  header.nlmsg_len = NLMSG_LENGTH(sizeof(inet_diag_req_v2));
  header.nlmsg_type = SOCK_DIAG_BY_FAMILY;
  header.nlmsg_flags = NLM_F_REQUEST | NLM_F_DUMP;
  inet_diag_req_v2 request{};  // zero id: no address or port filter, any interface
  request.sdiag_family = family == Family::kIPv4 ? AF_INET : AF_INET6;
  request.sdiag_protocol = protocol;
  request.idiag_ext = 0;  // no extensions: about 100 bytes per socket instead of ~300
  request.idiag_states = states;

  std::vector<std::byte> buffer(header.nlmsg_len);
  std::memcpy(buffer.data(), &header, sizeof(header));
  std::memcpy(buffer.data() + NLMSG_HDRLEN, &request, sizeof(request));
  return buffer;
}

Result<BoundSocket> parseSockDiagMessage(std::span<const std::byte> message, uint8_t protocol) {
  const auto bytes = messageBytes(message);
  if (!bytes) return malformed("truncated netlink header or bad nlmsg_len");
  const auto header = readStruct<nlmsghdr>(*bytes);
  if (header->nlmsg_type != SOCK_DIAG_BY_FAMILY) {
    return malformed("unexpected message type " + std::to_string(header->nlmsg_type));
  }
  const Bytes body = bytes->subspan(NLMSG_HDRLEN);
  const auto diag = readStruct<inet_diag_msg>(body);
  if (!diag) return malformed("truncated inet_diag_msg");

  BoundSocket socket;
  size_t addressLength = 0;
  if (diag->idiag_family == AF_INET) {
    socket.family = Family::kIPv4;
    addressLength = 4;
  } else if (diag->idiag_family == AF_INET6) {
    socket.family = Family::kIPv6;
    addressLength = 16;
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
    if (std::to_integer<uint8_t>(payload[0]) != protocol) {
      problem = "reply for protocol " + std::to_string(std::to_integer<int>(payload[0])) +
                " in a dump of protocol " + std::to_string(protocol);
      return false;
    }
    return true;
  });
  if (!ok) return malformed(problem.empty() ? "bad attribute length" : problem);

  socket.protocol = protocol;
  socket.state = diag->idiag_state;
  std::memcpy(socket.address.data(), diag->id.idiag_src, addressLength);
  socket.port = ntohs(diag->id.idiag_sport);
  socket.inode = diag->idiag_inode;
  socket.uid = diag->idiag_uid;
  return socket;
}

}  // namespace hostport::hostnet
