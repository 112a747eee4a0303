#pragma once
// Hand-built netlink bytes for the byte-by-byte tests of the message builders and parsers:
// kernel replies to parse, and the expected halves of golden requests.
//
// Independent of netlink/writer.h on purpose, and it must stay so: it shares no code with
// the library, writes every header field by hand from the ABI, and is simple enough to check by
// eye. A test that checked the writer's bytes with the writer itself would pass whatever the
// writer did.

#include <linux/netlink.h>

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <initializer_list>
#include <vector>

namespace hostport::test {

using ByteVector = std::vector<std::byte>;

inline ByteVector bytesOf(std::initializer_list<int> values) {
  ByteVector out;
  for (const int v : values) out.push_back(static_cast<std::byte>(v));
  return out;
}

/// The bytes of `value` in host order.
template <typename T>
ByteVector hostBytes(T value) {
  ByteVector out(sizeof(T));
  std::memcpy(out.data(), &value, sizeof(T));
  return out;
}

inline ByteVector be16(uint16_t v) { return bytesOf({v >> 8, v & 0xff}); }
inline ByteVector be32(uint32_t v) {
  return bytesOf({static_cast<int>(v >> 24), static_cast<int>((v >> 16) & 0xff),
                  static_cast<int>((v >> 8) & 0xff), static_cast<int>(v & 0xff)});
}

inline void append(ByteVector& out, const ByteVector& more) {
  out.insert(out.end(), more.begin(), more.end());
}

/// An attribute: nla_len counts header and payload but not the padding to four bytes.
inline ByteVector attr(uint16_t type, const ByteVector& payload) {
  ByteVector out = hostBytes<uint16_t>(static_cast<uint16_t>(4 + payload.size()));
  append(out, hostBytes<uint16_t>(type));
  append(out, payload);
  while (out.size() % 4 != 0) out.push_back(std::byte{0});
  return out;
}

/// A nested attribute (NLA_F_NESTED set) holding `children`.
inline ByteVector nest(uint16_t type, std::initializer_list<ByteVector> children) {
  ByteVector payload;
  for (const auto& child : children) append(payload, child);
  return attr(static_cast<uint16_t>(type | NLA_F_NESTED), payload);
}

/// A whole message: a 16-byte header, then `body`. Sequence number and port id are arbitrary
/// non-zero values, as in a real reply; no parser may depend on them.
inline ByteVector message(uint16_t type, uint16_t flags, const ByteVector& body) {
  ByteVector out = hostBytes<uint32_t>(static_cast<uint32_t>(16 + body.size()));
  append(out, hostBytes<uint16_t>(type));
  append(out, hostBytes<uint16_t>(flags));
  append(out, hostBytes<uint32_t>(3));     // seq
  append(out, hostBytes<uint32_t>(4242));  // pid
  append(out, body);
  return out;
}

/// A message whose body is a fixed header (nfgenmsg, rtmsg, ...) followed by attributes.
inline ByteVector message(uint16_t type, uint16_t flags, const ByteVector& fixedHeader,
                          std::initializer_list<ByteVector> attributes) {
  ByteVector body = fixedHeader;
  for (const auto& a : attributes) append(body, a);
  return message(type, flags, body);
}

/// The header of the message at the start of `bytes`.
inline nlmsghdr headerOf(const ByteVector& bytes) {
  nlmsghdr header{};
  std::memcpy(&header, bytes.data(), sizeof(header));
  return header;
}

/// The payload of the first attribute of `type` in the attribute stream starting at `offset`,
/// or empty.
inline ByteVector findAttribute(const ByteVector& stream, size_t offset, uint16_t type) {
  while (offset + 4 <= stream.size()) {
    uint16_t len = 0;
    uint16_t t = 0;
    std::memcpy(&len, stream.data() + offset, 2);
    std::memcpy(&t, stream.data() + offset + 2, 2);
    if (len < 4 || offset + len > stream.size()) break;
    if ((t & NLA_TYPE_MASK) == type) {
      return ByteVector(stream.begin() + offset + 4, stream.begin() + offset + len);
    }
    offset += (len + 3) & ~3u;
  }
  return {};
}

}  // namespace hostport::test
