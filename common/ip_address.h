#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "common/error.h"

namespace hostport {

enum class Family { kIPv4, kIPv6 };

std::string_view familyName(Family family);  // "ipv4" / "ipv6"

/// A validated IP address kept in canonical text form (inet_ntop output), so equal addresses
/// compare equal and the text is safe to hand to nftables.
class IpAddress {
 public:
  IpAddress() = default;  // 0.0.0.0
  static Result<IpAddress> parse(std::string_view text);

  Family family() const { return family_; }
  const std::string& str() const { return text_; }
  bool isUnspecified() const;  // 0.0.0.0 or ::

  friend bool operator==(const IpAddress&, const IpAddress&) = default;
  friend auto operator<=>(const IpAddress&, const IpAddress&) = default;

 private:
  IpAddress(Family family, std::string text) : family_(family), text_(std::move(text)) {}
  Family family_ = Family::kIPv4;
  std::string text_ = "0.0.0.0";
};

/// An address with a prefix length, such as a CNI result's "10.88.0.5/16".
struct IpPrefix {
  IpAddress address;
  int length = 0;

  static Result<IpPrefix> parse(std::string_view cidr);
  /// The network part: "10.88.0.0/16" for "10.88.0.5/16".
  IpPrefix network() const;
  std::string str() const;
  friend bool operator==(const IpPrefix&, const IpPrefix&) = default;
};

}  // namespace hostport
