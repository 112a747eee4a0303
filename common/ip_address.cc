#include "common/ip_address.h"

#include <arpa/inet.h>

#include <algorithm>
#include <charconv>

#include "common/quote.h"

namespace hostport {

std::string_view familyName(Family family) { return family == Family::kIPv4 ? "ipv4" : "ipv6"; }

std::size_t addressSize(Family family) { return family == Family::kIPv4 ? 4 : 16; }

Result<IpAddress> IpAddress::parse(std::string_view text) {
  // inet_pton needs a NUL-terminated string; bound the copy so hostile input stays small.
  if (text.empty() || text.size() > INET6_ADDRSTRLEN) {
    return fail(ErrorCode::kInvalidArgument, "invalid IP address " + quoteText(text));
  }
  const std::string copy(text);
  IpAddress address;
  if (inet_pton(AF_INET, copy.c_str(), address.bytes_.data()) == 1) return address;
  address.family_ = Family::kIPv6;
  if (inet_pton(AF_INET6, copy.c_str(), address.bytes_.data()) == 1) return address;
  return fail(ErrorCode::kInvalidArgument, "invalid IP address " + quoteText(text));
}

std::optional<IpAddress> IpAddress::fromBytes(Family family, std::span<const uint8_t> bytes) {
  if (bytes.size() != addressSize(family)) return std::nullopt;
  IpAddress address;
  address.family_ = family;
  std::ranges::copy(bytes, address.bytes_.begin());
  return address;
}

IpAddress IpAddress::unspecified(Family family) {
  IpAddress address;
  address.family_ = family;
  return address;
}

std::string IpAddress::str() const {
  char text[INET6_ADDRSTRLEN] = {};
  inet_ntop(family_ == Family::kIPv4 ? AF_INET : AF_INET6, bytes_.data(), text, sizeof(text));
  return text;
}

bool IpAddress::isUnspecified() const {
  return std::ranges::all_of(bytes(), [](uint8_t b) { return b == 0; });
}

std::string describeEndpoint(const IpAddress& address, uint16_t port) {
  const std::string host =
      address.family() == Family::kIPv4 ? address.str() : "[" + address.str() + "]";
  return host + ":" + std::to_string(port);
}

Result<IpPrefix> IpPrefix::parse(std::string_view cidr) {
  const auto slash = cidr.find('/');
  if (slash == std::string_view::npos) {
    return fail(ErrorCode::kInvalidArgument,
                "invalid CIDR " + quoteText(cidr) + ": missing prefix length");
  }
  HOSTPORT_TRY(const IpAddress address, IpAddress::parse(cidr.substr(0, slash)));
  const auto lengthText = cidr.substr(slash + 1);
  int length = -1;
  const auto [end, ec] =
      std::from_chars(lengthText.data(), lengthText.data() + lengthText.size(), length);
  const int maxLength = static_cast<int>(addressSize(address.family()) * 8);
  if (ec != std::errc{} || end != lengthText.data() + lengthText.size() || length < 0 ||
      length > maxLength) {
    return fail(ErrorCode::kInvalidArgument,
                "invalid CIDR " + quoteText(cidr) + ": bad prefix length");
  }
  return IpPrefix{address, length};
}

namespace {

/// `address` with every bit from `length` on cleared (network) or set (last address).
IpAddress withHostBits(const IpAddress& address, int length, bool set) {
  std::array<uint8_t, 16> bytes{};
  std::ranges::copy(address.bytes(), bytes.begin());
  const std::size_t size = address.bytes().size();
  for (std::size_t i = 0; i < size; ++i) {
    const int bitsKept = std::clamp(length - static_cast<int>(i) * 8, 0, 8);
    const auto hostMask = static_cast<uint8_t>(0xff >> bitsKept);
    bytes[i] = static_cast<uint8_t>(set ? (bytes[i] | hostMask) : (bytes[i] & ~hostMask));
  }
  return *IpAddress::fromBytes(address.family(), std::span(bytes.data(), size));
}

}  // namespace

IpPrefix IpPrefix::network() const { return {withHostBits(address, length, false), length}; }

IpAddress IpPrefix::lastAddress() const { return withHostBits(address, length, true); }

bool IpPrefix::contains(const IpAddress& other) const {
  return other.family() == address.family() && network().address <= other && other <= lastAddress();
}

bool IpPrefix::overlaps(const IpPrefix& other) const {
  return contains(other.network().address) || other.contains(network().address);
}

std::string IpPrefix::str() const { return address.str() + "/" + std::to_string(length); }

}  // namespace hostport
