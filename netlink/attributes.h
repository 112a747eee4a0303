#pragma once
// Bounds-checked reading of netlink messages and attributes from untrusted bytes.
//
// Design note: the parsers in this directory never cast a byte buffer to a kernel struct and
// never trust a length field before checking it against the bytes actually held. Headers are
// copied out with memcpy, so a span at any alignment (a test's hand-built array, a slice of a
// receive buffer) is fine. libmnl's iterators are avoided on purpose here: they assume an aligned
// buffer whose outer length was already validated, which is exactly what a parser must not assume.

#include <linux/netlink.h>

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <optional>
#include <span>

namespace hostport::netlink {

using Bytes = std::span<const std::byte>;

/// Copies a trivially copyable T from the start of `bytes`; nullopt when `bytes` is too short.
template <typename T>
std::optional<T> readStruct(Bytes bytes) {
  if (bytes.size() < sizeof(T)) return std::nullopt;
  T value;
  std::memcpy(&value, bytes.data(), sizeof(T));
  return value;
}

/// The bytes of one netlink message at the start of `bytes`, checked against its own nlmsg_len
/// (at least a header, at most what is held); nullopt when malformed.
inline std::optional<Bytes> messageBytes(Bytes bytes) {
  const auto header = readStruct<nlmsghdr>(bytes);
  if (!header || header->nlmsg_len < NLMSG_HDRLEN || header->nlmsg_len > bytes.size()) {
    return std::nullopt;
  }
  return bytes.first(header->nlmsg_len);
}

/// Calls `visit(type, payload)` for every attribute in `bytes` (a message body or a nest's
/// payload). `type` has NLA_F_NESTED / NLA_F_NET_BYTEORDER masked off. Returns false, possibly
/// after visiting a prefix, when an attribute header or length is malformed or trailing bytes
/// cannot hold an attribute; `visit` returning false stops early and is reported as false too.
template <typename Visit>
bool forEachAttribute(Bytes bytes, Visit&& visit) {
  while (!bytes.empty()) {
    const auto header = readStruct<nlattr>(bytes);
    if (!header || header->nla_len < NLA_HDRLEN || header->nla_len > bytes.size()) return false;
    const Bytes payload = bytes.subspan(NLA_HDRLEN, header->nla_len - NLA_HDRLEN);
    if (!visit(static_cast<uint16_t>(header->nla_type & NLA_TYPE_MASK), payload)) return false;
    // The last attribute may legally lack its alignment padding.
    const size_t advance = std::min<size_t>(NLA_ALIGN(header->nla_len), bytes.size());
    bytes = bytes.subspan(advance);
  }
  return true;
}

/// A fixed-size big-endian (network order) integer payload; nullopt when the size differs.
inline std::optional<uint16_t> readBe16(Bytes payload) {
  if (payload.size() != 2) return std::nullopt;
  return static_cast<uint16_t>((std::to_integer<uint16_t>(payload[0]) << 8) |
                               std::to_integer<uint16_t>(payload[1]));
}

inline std::optional<uint32_t> readBe32(Bytes payload) {
  if (payload.size() != 4) return std::nullopt;
  uint32_t value = 0;
  for (const std::byte b : payload) value = (value << 8) | std::to_integer<uint32_t>(b);
  return value;
}

/// A host-order u32 payload (rtnetlink uses host order, ctnetlink network order).
inline std::optional<uint32_t> readHostU32(Bytes payload) {
  if (payload.size() != 4) return std::nullopt;
  return readStruct<uint32_t>(payload);
}

}  // namespace hostport::netlink
