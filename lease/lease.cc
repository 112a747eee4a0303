#include "lease/lease.h"

#include <algorithm>
#include <charconv>

#include "common/ascii.h"
#include "common/quote.h"

namespace hostport {
namespace {

// A port is 1 to 5 ASCII digits with a value in 1..65535; no sign, no spaces, no hex.
std::optional<uint16_t> parsePort(std::string_view text) {
  if (text.empty() || text.size() > 5) return std::nullopt;
  if (!std::ranges::all_of(text, ascii::isDigit)) return std::nullopt;
  uint32_t value = 0;
  std::from_chars(text.data(), text.data() + text.size(), value);
  if (value == 0 || value > 65535) return std::nullopt;
  return static_cast<uint16_t>(value);
}

/// The one PortProtocol name that is no kernel protocol's (common/protocol.h names the others).
constexpr std::string_view kTcpUdpName = "tcpudp";

constexpr std::string_view kHostNetworkPrefix = "hostnetwork-";
constexpr std::string_view kHostNetworkInterface = "host";

}  // namespace

AttachmentKey AttachmentKey::ofHostNetworkPod(std::string_view uid) {
  return {std::string(kHostNetworkPrefix) + std::string(uid), std::string(kHostNetworkInterface)};
}

std::string_view AttachmentKey::hostNetworkPodUid() const {
  if (ifname != kHostNetworkInterface || !containerId.starts_with(kHostNetworkPrefix)) return {};
  return std::string_view(containerId).substr(kHostNetworkPrefix.size());
}

std::string_view protocolName(PortProtocol protocol) {
  const std::span<const Protocol> kernel = kernelProtocols(protocol);
  return kernel.size() == 1 ? hostport::protocolName(kernel.front()) : kTcpUdpName;
}

Result<PortProtocol> parsePortProtocol(std::string_view text) {
  if (ascii::equalsIgnoreCase(text, kTcpUdpName)) return PortProtocol::kTcpUdp;
  if (const auto protocol = parseProtocol(text)) return portProtocol(*protocol);
  return fail(ErrorCode::kInvalidArgument,
              "unknown protocol " + quoteText(text) + " (want tcp, udp, sctp or tcpudp)");
}

std::span<const Protocol> kernelProtocols(PortProtocol protocol) {
  static constexpr Protocol kTcp[] = {Protocol::kTcp};
  static constexpr Protocol kUdp[] = {Protocol::kUdp};
  static constexpr Protocol kSctp[] = {Protocol::kSctp};
  static constexpr Protocol kTcpUdp[] = {Protocol::kTcp, Protocol::kUdp};
  switch (protocol) {
    case PortProtocol::kTcp:
      return kTcp;
    case PortProtocol::kUdp:
      return kUdp;
    case PortProtocol::kSctp:
      return kSctp;
    case PortProtocol::kTcpUdp:
      return kTcpUdp;
  }
  return kTcp;
}

PortProtocol portProtocol(Protocol protocol) {
  switch (protocol) {
    case Protocol::kTcp:
      return PortProtocol::kTcp;
    case Protocol::kUdp:
      return PortProtocol::kUdp;
    case Protocol::kSctp:
      return PortProtocol::kSctp;
  }
  return PortProtocol::kTcp;
}

std::string PortRange::str() const {
  if (first == last) return std::to_string(first);
  return std::to_string(first) + "-" + std::to_string(last);
}

std::string PortGrant::str() const {
  const auto span = [this](uint16_t first) {
    return PortRange{first, static_cast<uint16_t>(first + count - 1)}.str();
  };
  std::string host = hostIp ? describeEndpoint(*hostIp, hostPort) : hostPorts().str();
  if (hostIp && count > 1) host += "-" + std::to_string(hostPorts().last);
  const std::string protocolText = "/" + std::string(protocolName(protocol));
  if (containerPort == 0) return host + protocolText;  // a hostNetwork pod's: forwarded nowhere
  return host + "->" + span(containerPort) + protocolText;
}

Result<PortRange> PortRange::parse(std::string_view text) {
  const auto dash = text.find('-');
  const std::string_view head = text.substr(0, dash);
  const std::string_view tail = dash == std::string_view::npos ? head : text.substr(dash + 1);
  const auto first = parsePort(head);
  const auto last = parsePort(tail);
  if (!first || !last) {
    return fail(ErrorCode::kInvalidArgument, "port range " + quoteText(text) +
                                                 " must be \"<port>\" or \"<first>-<last>\" with " +
                                                 "ports in 1-65535");
  }
  if (*first > *last) {
    return fail(ErrorCode::kInvalidArgument,
                "port range " + quoteText(text) + " is empty: its first port is above its last");
  }
  return PortRange{*first, *last};
}

}  // namespace hostport
