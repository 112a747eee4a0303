#pragma once
// IP addresses as the kernel holds them: 4 or 16 bytes in network order, with the text form
// computed when a person or nftables' text parser needs it. Every binary consumer (netlink
// builders, nf_tables element bytes, the lease codecs) takes bytes() as they are, so no caller
// parses text back into bytes or has to decide what to do when that fails.

#include <array>
#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>

#include "common/error.h"

namespace hostport {

enum class Family : uint8_t { kIPv4, kIPv6 };

std::string_view familyName(Family family);  // "ipv4" / "ipv6"
/// The size of an address of `family`: 4 or 16 bytes.
std::size_t addressSize(Family family);

/// A validated IPv4 or IPv6 address. Equal addresses compare equal whatever text they came from,
/// and order numerically within a family (IPv4 first).
class IpAddress {
 public:
  IpAddress() = default;  // 0.0.0.0
  static Result<IpAddress> parse(std::string_view text);
  /// The address held in `bytes` (network order); nullopt unless it is addressSize(family) long.
  static std::optional<IpAddress> fromBytes(Family family, std::span<const uint8_t> bytes);
  /// 0.0.0.0 or ::, which stands for every address of the family.
  static IpAddress unspecified(Family family);

  Family family() const { return family_; }
  /// addressSize(family()) bytes in network order. A view into this address, so a temporary's
  /// bytes would dangle at the end of the statement: name the address first.
  std::span<const uint8_t> bytes() const& { return {bytes_.data(), addressSize(family_)}; }
  std::span<const uint8_t> bytes() const&& = delete;
  /// The canonical text (inet_ntop's): "10.88.0.5", "2001:db8::1".
  std::string str() const;
  bool isUnspecified() const;  // 0.0.0.0 or ::

  friend bool operator==(const IpAddress&, const IpAddress&) = default;
  friend auto operator<=>(const IpAddress&, const IpAddress&) = default;

 private:
  Family family_ = Family::kIPv4;
  std::array<uint8_t, 16> bytes_{};  // IPv4 uses the first 4; the rest stay zero
};

/// "10.88.0.5:80" or "[2001:db8::1]:80": an endpoint as people and ss(8) write it.
std::string describeEndpoint(const IpAddress& address, uint16_t port);

/// An address with a prefix length, such as a CNI result's "10.88.0.5/16".
struct IpPrefix {
  IpAddress address;
  int length = 0;

  static Result<IpPrefix> parse(std::string_view cidr);
  /// The network part: "10.88.0.0/16" for "10.88.0.5/16".
  IpPrefix network() const;
  /// The last address of the prefix: "10.88.255.255" for "10.88.0.5/16".
  IpAddress lastAddress() const;
  bool contains(const IpAddress& other) const;
  /// True when the two share an address: one of them holds the other.
  bool overlaps(const IpPrefix& other) const;
  std::string str() const;
  friend bool operator==(const IpPrefix&, const IpPrefix&) = default;
};

}  // namespace hostport
