#include "common/ip_address.h"

#include <arpa/inet.h>

#include <algorithm>
#include <array>
#include <charconv>

namespace hostport {

std::string_view familyName(Family family) { return family == Family::kIPv4 ? "ipv4" : "ipv6"; }

Result<IpAddress> IpAddress::parse(std::string_view text) {
  // inet_pton needs a NUL-terminated string; bound the copy so hostile input stays small.
  if (text.empty() || text.size() > INET6_ADDRSTRLEN) {
    return fail(ErrorCode::kInvalidArgument, "invalid IP address \"" + std::string(text) + "\"");
  }
  const std::string copy(text);
  std::array<unsigned char, 16> bytes{};
  std::array<char, INET6_ADDRSTRLEN> canonical{};
  if (inet_pton(AF_INET, copy.c_str(), bytes.data()) == 1) {
    inet_ntop(AF_INET, bytes.data(), canonical.data(), canonical.size());
    return IpAddress(Family::kIPv4, canonical.data());
  }
  if (inet_pton(AF_INET6, copy.c_str(), bytes.data()) == 1) {
    inet_ntop(AF_INET6, bytes.data(), canonical.data(), canonical.size());
    return IpAddress(Family::kIPv6, canonical.data());
  }
  return fail(ErrorCode::kInvalidArgument, "invalid IP address \"" + copy + "\"");
}

bool IpAddress::isUnspecified() const { return text_ == "0.0.0.0" || text_ == "::"; }

Result<IpPrefix> IpPrefix::parse(std::string_view cidr) {
  const auto slash = cidr.find('/');
  if (slash == std::string_view::npos) {
    return fail(ErrorCode::kInvalidArgument,
                "invalid CIDR \"" + std::string(cidr) + "\": missing prefix length");
  }
  auto address = IpAddress::parse(cidr.substr(0, slash));
  if (!address) return std::unexpected(address.error());
  const auto lengthText = cidr.substr(slash + 1);
  int length = -1;
  const auto [end, ec] =
      std::from_chars(lengthText.data(), lengthText.data() + lengthText.size(), length);
  const int maxLength = address->family() == Family::kIPv4 ? 32 : 128;
  if (ec != std::errc{} || end != lengthText.data() + lengthText.size() || length < 0 ||
      length > maxLength) {
    return fail(ErrorCode::kInvalidArgument,
                "invalid CIDR \"" + std::string(cidr) + "\": bad prefix length");
  }
  return IpPrefix{*address, length};
}

IpPrefix IpPrefix::network() const {
  const bool v4 = address.family() == Family::kIPv4;
  const int af = v4 ? AF_INET : AF_INET6;
  const int bytesLength = v4 ? 4 : 16;
  std::array<unsigned char, 16> bytes{};
  inet_pton(af, address.str().c_str(), bytes.data());
  for (int i = 0; i < bytesLength; ++i) {
    const int bitsKept = std::clamp(length - i * 8, 0, 8);
    bytes[i] &= static_cast<unsigned char>(0xff00 >> bitsKept);
  }
  std::array<char, INET6_ADDRSTRLEN> text{};
  inet_ntop(af, bytes.data(), text.data(), text.size());
  return IpPrefix{*IpAddress::parse(text.data()), length};
}

std::string IpPrefix::str() const { return address.str() + "/" + std::to_string(length); }

}  // namespace hostport
