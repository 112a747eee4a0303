#pragma once
// Writing netlink requests: the one writer every request builder uses (rtnetlink, ctnetlink,
// sock_diag, nf_tables), the counterpart of attributes.h's reader.
//
// Design note: the writer appends to one byte vector and patches lengths in place when a message
// or nest ends, so a builder never sizes a buffer by hand. It writes what libmnl would: a header
// with nlmsg_len covering the aligned body, nla_len without the attribute's padding, padding bytes
// zero. Sequence number and port id stay zero; the socket stamps them (socket.h), so a request's
// bytes are a pure value that tests compare byte by byte.

#include <linux/netlink.h>

#include <cstddef>
#include <cstdint>
#include <span>
#include <string_view>
#include <type_traits>
#include <vector>

namespace hostport::netlink {

/// Appends netlink messages and their (nested) attributes to one buffer, NLA-aligned.
class NetlinkWriter {
 public:
  /// `flags` are written as given, NLM_F_REQUEST included: the writer cannot know whether a
  /// message wants an ACK, a dump or neither. The length is patched in by endMessage(), once the
  /// body is known.
  void beginMessage(uint16_t type, uint16_t flags);
  /// Every family header (nfgenmsg, rtmsg, inet_diag_req_v2, ...) is padded to NLMSG_ALIGNTO
  /// here, as the kernel reads the attributes after it from the aligned offset.
  template <typename FamilyHeader>
  void beginMessage(uint16_t type, uint16_t flags, const FamilyHeader& header) {
    static_assert(std::is_trivially_copyable_v<FamilyHeader>);
    beginMessage(type, flags);
    append(&header, sizeof(header));
    pad(NLMSG_ALIGNTO);
  }
  void endMessage();

  void attribute(uint16_t type, std::span<const std::byte> payload);
  /// With a NUL, as mnl_attr_put_strz() writes it: the kernel and nft read names back as C
  /// strings. `text` need not end in one.
  void stringAttribute(uint16_t type, std::string_view text);
  void u8Attribute(uint16_t type, uint8_t value);
  /// The byte order is in the name because each family picks its own: ctnetlink's ports and
  /// addresses are big-endian.
  void be16Attribute(uint16_t type, uint16_t value);
  void be32Attribute(uint16_t type, uint32_t value);
  /// rtnetlink and CTA_FILTER flags are host order, unlike the rest of ctnetlink.
  void hostU32Attribute(uint16_t type, uint32_t value);

  /// NLA_F_NESTED is set, as mnl_attr_nest_start() sets it, so the bytes stay libmnl's. The
  /// returned offset is where endNest() patches the length.
  [[nodiscard]] size_t beginNest(uint16_t type);
  void endNest(size_t nest);

  /// Lets a builder split a long list over several messages before an attribute's 16-bit length
  /// overflows (nf_tables element batches).
  size_t size() const { return bytes_.size(); }
  /// Moves the bytes out, so a request is built without a copy; the writer is empty afterwards.
  std::vector<std::byte> take();

 private:
  void append(const void* data, size_t size);
  void pad(size_t alignment);

  std::vector<std::byte> bytes_;
  size_t messageStart_ = 0;
};

}  // namespace hostport::netlink
