#pragma once
// The transport protocols that carry host ports, in one vocabulary for the whole tree: the
// nftables maps, the host socket checks, the allocation core and the CNI config all speak of a
// `Protocol`, and only this file knows its IANA number and its name.

#include <array>
#include <cstdint>
#include <initializer_list>
#include <optional>
#include <string>
#include <string_view>

#include "common/error.h"

namespace hostport {

/// A protocol with ports that a forward can match (nft's `meta l4proto`).
enum class Protocol : uint8_t { kTcp, kUdp, kSctp };

/// Every Protocol, in enum order.
inline constexpr std::array<Protocol, 3> kAllProtocols = {Protocol::kTcp, Protocol::kUdp,
                                                          Protocol::kSctp};

/// "tcp", "udp" or "sctp", as nft and Kubernetes write them (in lower case).
std::string_view protocolName(Protocol protocol);

/// Case-insensitive, since containerd sends "TCP". kInvalidArgument naming the text otherwise.
Result<Protocol> parseProtocol(std::string_view text);

/// The IANA protocol number (IPPROTO_TCP, IPPROTO_UDP, IPPROTO_SCTP).
uint8_t ipProtocolNumber(Protocol protocol);

/// The Protocol of an IANA number; nullopt for a protocol without ports or one we do not forward.
std::optional<Protocol> fromIpProtocolNumber(uint8_t number);

/// The name of any IP protocol number the kernel reports (a conntrack entry may be ICMP):
/// "tcp", "udp", "sctp", "icmp", "icmpv6", or "proto <n>".
std::string ipProtocolName(uint8_t number);

/// "tcp/8080": one port of one protocol, as messages and logs name it.
std::string describePort(Protocol protocol, uint16_t port);

/// A set of Protocols in one byte, for what a pool allows or a socket dump covers.
class ProtocolSet {
 public:
  constexpr ProtocolSet() = default;
  constexpr ProtocolSet(std::initializer_list<Protocol> protocols) {
    for (const Protocol protocol : protocols) add(protocol);
  }
  static constexpr ProtocolSet all() {
    ProtocolSet set;
    for (const Protocol protocol : kAllProtocols) set.add(protocol);
    return set;
  }

  constexpr void add(Protocol protocol) { bits_ |= bit(protocol); }
  constexpr ProtocolSet& operator|=(ProtocolSet other) {
    bits_ |= other.bits_;
    return *this;
  }
  constexpr bool contains(Protocol protocol) const { return (bits_ & bit(protocol)) != 0; }
  /// True when every protocol of `other` is in this set.
  constexpr bool includes(ProtocolSet other) const { return (other.bits_ & ~bits_) == 0; }
  constexpr bool empty() const { return bits_ == 0; }
  friend constexpr bool operator==(ProtocolSet, ProtocolSet) = default;

 private:
  static constexpr uint8_t bit(Protocol protocol) {
    return static_cast<uint8_t>(1u << static_cast<unsigned>(protocol));
  }
  uint8_t bits_ = 0;
};

}  // namespace hostport
