#include "common/protocol.h"

#include <netinet/in.h>

#include "common/ascii.h"
#include "common/quote.h"

namespace hostport {

std::string_view protocolName(Protocol protocol) {
  switch (protocol) {
    case Protocol::kTcp:
      return "tcp";
    case Protocol::kUdp:
      return "udp";
    case Protocol::kSctp:
      return "sctp";
  }
  return "tcp";
}

Result<Protocol> parseProtocol(std::string_view text) {
  for (const Protocol protocol : kAllProtocols) {
    if (ascii::equalsIgnoreCase(text, protocolName(protocol))) return protocol;
  }
  return fail(ErrorCode::kInvalidArgument,
              "unknown protocol " + quoteText(text) + " (want tcp, udp or sctp)");
}

uint8_t ipProtocolNumber(Protocol protocol) {
  switch (protocol) {
    case Protocol::kTcp:
      return IPPROTO_TCP;
    case Protocol::kUdp:
      return IPPROTO_UDP;
    case Protocol::kSctp:
      return IPPROTO_SCTP;
  }
  return IPPROTO_TCP;
}

std::optional<Protocol> fromIpProtocolNumber(uint8_t number) {
  for (const Protocol protocol : kAllProtocols) {
    if (ipProtocolNumber(protocol) == number) return protocol;
  }
  return std::nullopt;
}

std::string ipProtocolName(uint8_t number) {
  if (const auto protocol = fromIpProtocolNumber(number))
    return std::string(protocolName(*protocol));
  switch (number) {
    case IPPROTO_ICMP:
      return "icmp";
    case IPPROTO_ICMPV6:
      return "icmpv6";
    default:
      return "proto " + std::to_string(number);
  }
}

std::string describePort(Protocol protocol, uint16_t port) {
  return std::string(protocolName(protocol)) + "/" + std::to_string(port);
}

}  // namespace hostport
