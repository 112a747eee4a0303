#include "netlink/writer.h"

#include <arpa/inet.h>

#include <cstring>
#include <utility>

namespace hostport::netlink {

void NetlinkWriter::beginMessage(uint16_t type, uint16_t flags) {
  pad(NLMSG_ALIGNTO);  // messages of a batch start aligned
  messageStart_ = bytes_.size();
  nlmsghdr header{};
  header.nlmsg_type = type;
  header.nlmsg_flags = flags;
  append(&header, sizeof(header));
}

void NetlinkWriter::endMessage() {
  const auto length = static_cast<uint32_t>(bytes_.size() - messageStart_);
  std::memcpy(bytes_.data() + messageStart_ + offsetof(nlmsghdr, nlmsg_len), &length,
              sizeof(length));
}

void NetlinkWriter::attribute(uint16_t type, std::span<const std::byte> payload) {
  const nlattr header{static_cast<uint16_t>(NLA_HDRLEN + payload.size()), type};
  append(&header, sizeof(header));
  append(payload.data(), payload.size());
  pad(NLA_ALIGNTO);
}

void NetlinkWriter::stringAttribute(uint16_t type, std::string_view text) {
  // The NUL is appended here rather than copied from a std::string: `text` need not end in one.
  const nlattr header{static_cast<uint16_t>(NLA_HDRLEN + text.size() + 1), type};
  append(&header, sizeof(header));
  append(text.data(), text.size());
  bytes_.push_back(std::byte{0});
  pad(NLA_ALIGNTO);
}

void NetlinkWriter::u8Attribute(uint16_t type, uint8_t value) {
  attribute(type, std::as_bytes(std::span(&value, 1)));
}

void NetlinkWriter::be16Attribute(uint16_t type, uint16_t value) {
  const uint16_t network = htons(value);
  attribute(type, std::as_bytes(std::span(&network, 1)));
}

void NetlinkWriter::be32Attribute(uint16_t type, uint32_t value) {
  const uint32_t network = htonl(value);
  attribute(type, std::as_bytes(std::span(&network, 1)));
}

void NetlinkWriter::hostU32Attribute(uint16_t type, uint32_t value) {
  attribute(type, std::as_bytes(std::span(&value, 1)));
}

size_t NetlinkWriter::beginNest(uint16_t type) {
  const size_t nest = bytes_.size();
  const nlattr header{0, static_cast<uint16_t>(type | NLA_F_NESTED)};
  append(&header, sizeof(header));
  return nest;
}

void NetlinkWriter::endNest(size_t nest) {
  const auto length = static_cast<uint16_t>(bytes_.size() - nest);
  std::memcpy(bytes_.data() + nest + offsetof(nlattr, nla_len), &length, sizeof(length));
}

std::vector<std::byte> NetlinkWriter::take() {
  std::vector<std::byte> bytes = std::move(bytes_);
  bytes_.clear();
  messageStart_ = 0;
  return bytes;
}

void NetlinkWriter::append(const void* data, size_t size) {
  const auto* first = static_cast<const std::byte*>(data);
  bytes_.insert(bytes_.end(), first, first + size);
}

void NetlinkWriter::pad(size_t alignment) {
  bytes_.resize((bytes_.size() + alignment - 1) / alignment * alignment);
}

}  // namespace hostport::netlink
