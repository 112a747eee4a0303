#pragma once
// Writing netlink requests: the one writer every request builder uses (rtnetlink, ctnetlink,
// sock_diag, nf_tables), the counterpart of netlink_attributes.h's reader.
//
// Design note: the writer appends to one byte vector and patches lengths in place when a message
// or nest ends, so a builder never sizes a buffer by hand. It writes what libmnl would: a header
// with nlmsg_len covering the aligned body, nla_len without the attribute's padding, padding bytes
// zero. Sequence number and port id stay zero; the socket stamps them (netlink_socket.h).

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
  /// Starts a message of `type` with exactly `flags` (NLM_F_REQUEST included by the caller);
  /// endMessage() fills in its length.
  void beginMessage(uint16_t type, uint16_t flags);
  /// Starts a message whose body opens with a family header (nfgenmsg, rtmsg, inet_diag_req_v2,
  /// ...), padded to NLMSG_ALIGNTO.
  template <typename FamilyHeader>
  void beginMessage(uint16_t type, uint16_t flags, const FamilyHeader& header) {
    static_assert(std::is_trivially_copyable_v<FamilyHeader>);
    beginMessage(type, flags);
    append(&header, sizeof(header));
    pad(NLMSG_ALIGNTO);
  }
  void endMessage();

  /// One attribute with `payload` as its bytes.
  void attribute(uint16_t type, std::span<const std::byte> payload);
  /// A NUL-terminated string attribute.
  void stringAttribute(uint16_t type, std::string_view text);
  void u8Attribute(uint16_t type, uint8_t value);
  /// Big-endian (network order) integers, as ctnetlink wants them.
  void be16Attribute(uint16_t type, uint16_t value);
  void be32Attribute(uint16_t type, uint32_t value);
  /// A host-order u32, as rtnetlink and CTA_FILTER flags want it.
  void hostU32Attribute(uint16_t type, uint32_t value);

  /// Opens a nest (NLA_F_NESTED set); pass the returned offset to endNest().
  [[nodiscard]] size_t beginNest(uint16_t type);
  void endNest(size_t nest);

  /// Bytes written so far.
  size_t size() const { return bytes_.size(); }
  /// The bytes; the writer is empty afterwards.
  std::vector<std::byte> take();

 private:
  void append(const void* data, size_t size);
  void pad(size_t alignment);

  std::vector<std::byte> bytes_;
  size_t messageStart_ = 0;
};

}  // namespace hostport::netlink
