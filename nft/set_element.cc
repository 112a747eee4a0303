#include "nft/set_element.h"

#include <array>
#include <cstring>

#include "nft/table_layout.h"

namespace hostport::nft {
namespace {

constexpr std::byte kCommentTlv{0};  // NFTNL_UDATA_SET_ELEM_COMMENT
constexpr size_t kRegister = 4;      // NFT_REG32_SIZE: the width every concatenated field rounds to

void appendAddress(ByteString& out, const IpAddress& address) {
  for (const uint8_t b : address.bytes()) out.push_back(std::byte{b});
}

void appendProtocol(ByteString& out, Protocol protocol) {
  out.insert(out.end(),
             {std::byte{ipProtocolNumber(protocol)}, std::byte{0}, std::byte{0}, std::byte{0}});
}

void appendPort(ByteString& out, uint16_t port) {
  out.insert(out.end(), {std::byte(port >> 8), std::byte(port & 0xff), std::byte{0}, std::byte{0}});
}

/// Reads the fields of a concatenation front to back; any misfit poisons the whole read.
class FieldReader {
 public:
  explicit FieldReader(std::span<const std::byte> bytes) : bytes_(bytes) {}

  std::optional<IpAddress> address(Family family) {
    const size_t size = addressSize(family);
    if (!take(size)) return std::nullopt;
    return IpAddress::fromBytes(
        family, {reinterpret_cast<const uint8_t*>(bytes_.data() + offset_ - size), size});
  }

  std::optional<Protocol> protocol() {
    if (!take(kRegister) || !padded(offset_ - 3)) return std::nullopt;
    return fromIpProtocolNumber(std::to_integer<uint8_t>(bytes_[offset_ - kRegister]));
  }

  std::optional<uint16_t> port() {
    if (!take(kRegister) || !padded(offset_ - 2)) return std::nullopt;
    return static_cast<uint16_t>(std::to_integer<uint16_t>(bytes_[offset_ - 4]) << 8 |
                                 std::to_integer<uint16_t>(bytes_[offset_ - 3]));
  }

  bool atEnd() const { return offset_ == bytes_.size(); }

 private:
  bool take(size_t size) {
    if (bytes_.size() - offset_ < size) return false;
    offset_ += size;
    return true;
  }
  bool padded(size_t from) const {
    for (size_t i = from; i < offset_; ++i) {
      if (bytes_[i] != std::byte{0}) return false;
    }
    return true;
  }

  std::span<const std::byte> bytes_;
  size_t offset_ = 0;
};

/// The prefix whose range is exactly [first, last]; nullopt when the range is not a prefix.
std::optional<IpPrefix> prefixSpanning(const IpAddress& first, const IpAddress& last) {
  for (int length = 0; length <= static_cast<int>(first.bytes().size() * 8); ++length) {
    const IpPrefix prefix{first, length};
    if (prefix.network().address == first && prefix.lastAddress() == last) return prefix;
  }
  return std::nullopt;
}

}  // namespace

ByteString commentUserdata(std::string_view comment) {
  ByteString out{kCommentTlv, std::byte(comment.size() + 1)};
  for (const char c : comment) out.push_back(std::byte(c));
  out.push_back(std::byte{0});
  return out;
}

std::string_view commentOf(std::span<const std::byte> userdata) {
  for (size_t offset = 0; offset + 2 <= userdata.size();) {
    const auto type = userdata[offset];
    const auto length = std::to_integer<size_t>(userdata[offset + 1]);
    if (offset + 2 + length > userdata.size()) break;
    if (type == kCommentTlv && length > 0) {
      const std::string_view text(reinterpret_cast<const char*>(userdata.data() + offset + 2),
                                  length);
      return text.substr(0, text.find('\0'));
    }
    offset += 2 + length;
  }
  return {};
}

SetElement elementOf(const Forward& forward, std::string_view owner) {
  SetElement element;
  element.family = forward.family();
  element.set = std::string(forward.hostIp ? kHostIpPortsMap : kPortsMap);
  if (forward.hostIp) appendAddress(element.key, *forward.hostIp);
  appendProtocol(element.key, forward.protocol);
  appendPort(element.key, forward.hostPort);
  appendAddress(element.data, forward.containerIp);
  appendPort(element.data, forward.containerPort);
  element.userdata = commentUserdata(owner);
  return element;
}

SetElement elementOf(const Masquerade& masquerade, std::string_view owner) {
  SetElement element;
  element.family = masquerade.family();
  element.set =
      std::string(masquerade.scope == MasqueradeScope::kPodSubnet ? kSnatPodsSet : kMasqAllSet);
  appendAddress(element.key, masquerade.podIp);
  element.userdata = commentUserdata(owner);
  return element;
}

SetElement podSubnetElement(const IpPrefix& subnet) {
  SetElement element;
  element.family = subnet.address.family();
  element.set = std::string(kPodSubnetsSet);
  const IpAddress first = subnet.network().address;
  const IpAddress last = subnet.lastAddress();
  appendAddress(element.key, first);
  appendAddress(element.key, first);
  appendAddress(element.keyEnd, last);
  appendAddress(element.keyEnd, last);
  return element;
}

std::optional<Forward> forwardIn(const SetElementView& element) {
  const bool byHostIp = element.set == kHostIpPortsMap;
  if (!byHostIp && element.set != kPortsMap) return std::nullopt;
  Forward forward;
  FieldReader key(element.key);
  if (byHostIp) {
    forward.hostIp = key.address(element.family);
    if (!forward.hostIp) return std::nullopt;
  }
  const auto protocol = key.protocol();
  const auto hostPort = key.port();
  FieldReader data(element.data);
  const auto containerIp = data.address(element.family);
  const auto containerPort = data.port();
  if (!protocol || !hostPort || !key.atEnd() || !containerIp || !containerPort || !data.atEnd()) {
    return std::nullopt;
  }
  forward.protocol = *protocol;
  forward.hostPort = *hostPort;
  forward.containerIp = *containerIp;
  forward.containerPort = *containerPort;
  return forward;
}

std::optional<Masquerade> masqueradeIn(const SetElementView& element) {
  const bool podSubnet = element.set == kSnatPodsSet;
  if (!podSubnet && element.set != kMasqAllSet) return std::nullopt;
  FieldReader key(element.key);
  const auto podIp = key.address(element.family);
  if (!podIp || !key.atEnd() || !element.keyEnd.empty()) return std::nullopt;
  return Masquerade{*podIp,
                    podSubnet ? MasqueradeScope::kPodSubnet : MasqueradeScope::kEverySource};
}

std::optional<InstalledForward> forwardOf(const SetElementView& element) {
  auto forward = forwardIn(element);
  if (!forward) return std::nullopt;
  return InstalledForward{std::string(commentOf(element.userdata)), std::move(*forward),
                          std::nullopt};
}

std::optional<InstalledMasquerade> masqueradeOf(const SetElementView& element) {
  auto masquerade = masqueradeIn(element);
  if (!masquerade) return std::nullopt;
  return InstalledMasquerade{std::string(commentOf(element.userdata)), *masquerade};
}

std::optional<IpPrefix> podSubnetOf(const SetElementView& element) {
  if (element.set != kPodSubnetsSet) return std::nullopt;
  FieldReader start(element.key);
  FieldReader end(element.keyEnd);
  const auto first = start.address(element.family);
  const auto firstAgain = start.address(element.family);
  const auto last = end.address(element.family);
  const auto lastAgain = end.address(element.family);
  if (!first || !firstAgain || !start.atEnd() || !last || !lastAgain || !end.atEnd()) {
    return std::nullopt;
  }
  if (*first != *firstAgain || *last != *lastAgain) return std::nullopt;  // not subnet . subnet
  return prefixSpanning(*first, *last);
}

void scanElement(const SetElementView& element, TableScan& scan) {
  if (auto forward = forwardIn(element)) {
    scan.forward(commentOf(element.userdata), *forward, std::nullopt);
  } else if (auto masquerade = masqueradeIn(element)) {
    scan.masquerade(commentOf(element.userdata), *masquerade);
  } else if (auto subnet = podSubnetOf(element)) {
    scan.podSubnet(*subnet);
  }
}

TableState stateOf(const std::vector<SetElement>& elements) {
  TableStateCollector collector;
  for (const auto& element : elements) scanElement(element, collector);
  return collector.take();
}

}  // namespace hostport::nft
