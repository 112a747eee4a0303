#include "agent/core/packed_lease.h"

#include <cstring>
#include <optional>

#include "agent/core/packed_text.h"
#include "lease/lease_flags.h"

namespace hostport::agent::core {
namespace {

using packed::ByteReader;
using packed::putText;
using packed::putU16;
using packed::putVarint;

constexpr uint8_t kProtocolBits = 0x03;
constexpr uint8_t kStatic = 0x04;
constexpr uint8_t kCount = 0x08;
constexpr uint8_t kName = 0x10;
constexpr uint8_t kIPv4 = 0x20;
constexpr uint8_t kIPv6 = 0x40;
constexpr uint8_t kProtocolByte = 0x80;

constexpr std::size_t kUuidChars = 36;

// The byte after the grants: lease/lease_flags.h, whose own bit says that conditions follow.
using namespace lease_flags;
constexpr uint8_t kConditions = kEncodingOwn;

// Where the interned head of a pod name ends (see the header).
std::size_t podNameSplit(std::string_view name) {
  const auto dash = name.rfind('-');
  return dash == std::string_view::npos ? 0 : dash + 1;
}

// Where the interned head of a netns path ends (see the header).
std::size_t netnsSplit(std::string_view netns) {
  if (packed::endsInUuid(netns)) return netns.size() - kUuidChars;
  const auto slash = netns.rfind('/');
  return slash == std::string_view::npos ? 0 : slash + 1;
}

// Appends the interned head of `text` (up to `split`) and the packed rest.
void putSplit(std::string& out, std::string_view text, std::size_t split, StringTable& strings) {
  putVarint(out, strings.intern(text.substr(0, split)));
  putText(out, text.substr(split));
}

std::string readSplit(ByteReader& in, const StringTable& strings) {
  std::string text(strings.text(static_cast<uint32_t>(in.varint())));
  in.appendText(text);
  return text;
}

void putGrant(std::string& out, const PortGrant& grant) {
  const auto protocol = static_cast<uint8_t>(grant.protocol);
  uint8_t flags = protocol <= kProtocolBits ? protocol : kProtocolByte;
  if (grant.isStatic) flags |= kStatic;
  if (grant.count != 1) flags |= kCount;
  if (!grant.name.empty()) flags |= kName;
  if (grant.hostIp) flags |= grant.hostIp->family() == Family::kIPv4 ? kIPv4 : kIPv6;
  out.push_back(static_cast<char>(flags));
  putU16(out, grant.hostPort);
  putU16(out, grant.containerPort);
  if ((flags & kProtocolByte) != 0) out.push_back(static_cast<char>(protocol));
  if ((flags & kCount) != 0) putVarint(out, grant.count);
  if ((flags & kName) != 0) putText(out, grant.name);
  if (grant.hostIp) {
    const auto address = grant.hostIp->bytes();
    out.append(reinterpret_cast<const char*>(address.data()), address.size());
  }
}

IpAddress readAddress(ByteReader& in, bool v4) {
  const Family family = v4 ? Family::kIPv4 : Family::kIPv6;
  const std::size_t size = addressSize(family);
  return *IpAddress::fromBytes(family, {in.take(size), size});
}

void putPrefix(std::string& out, const IpPrefix& prefix) {
  out.push_back(static_cast<char>(prefix.length));
  const auto address = prefix.address.bytes();
  out.append(reinterpret_cast<const char*>(address.data()), address.size());
}

IpPrefix readPrefix(ByteReader& in, bool v4) {
  const uint8_t length = in.u8();
  return {readAddress(in, v4), length};
}

// The network name is interned: every lease of a node names one or two networks.
void putForwarding(std::string& out, const Lease& lease, StringTable& strings) {
  const auto& forwarding = lease.forwarding;
  uint8_t flags = lease_flags::of(lease);
  if (forwarding && !(forwarding->conditionsV4.empty() && forwarding->conditionsV6.empty())) {
    flags |= kConditions;
  }
  out.push_back(static_cast<char>(flags));
  if (forwarding) {
    putVarint(out, strings.intern(forwarding->network));
    if (forwarding->podV4) putPrefix(out, *forwarding->podV4);
    if (forwarding->podV6) putPrefix(out, *forwarding->podV6);
    if ((flags & kConditions) != 0) {
      putText(out, forwarding->conditionsV4);
      putText(out, forwarding->conditionsV6);
    }
  }
  if (lease.netnsId.known()) {
    putVarint(out, lease.netnsId.device);
    putVarint(out, lease.netnsId.inode);
  }
}

/// Reads what putForwarding() wrote; `network` gets the interned id of the network name, if any.
void readForwarding(ByteReader& in, const StringTable* strings, Lease* lease,
                    std::optional<uint32_t>* network) {
  const uint8_t flags = in.u8();
  if ((flags & kForwarding) != 0) {
    Forwarding forwarding;
    const auto id = static_cast<uint32_t>(in.varint());
    if (network != nullptr) *network = id;
    if (strings != nullptr) forwarding.network = strings->text(id);
    forwarding.snat = (flags & kSnat) != 0;
    forwarding.masqAll = (flags & kMasqAll) != 0;
    if ((flags & kPodV4) != 0) forwarding.podV4 = readPrefix(in, true);
    if ((flags & kPodV6) != 0) forwarding.podV6 = readPrefix(in, false);
    if ((flags & kConditions) != 0) {
      forwarding.conditionsV4 = in.text();
      forwarding.conditionsV6 = in.text();
    }
    if (lease != nullptr) lease->forwarding = std::move(forwarding);
  }
  if ((flags & kNetnsId) != 0) {
    const uint64_t device = in.varint();
    const uint64_t inode = in.varint();
    if (lease != nullptr) lease->netnsId = {device, inode};
  }
  if (lease != nullptr) lease->sticky = (flags & kNotSticky) == 0;
}

PortGrant readGrant(ByteReader& in) {
  PortGrant grant;
  const uint8_t flags = in.u8();
  grant.hostPort = in.u16();
  grant.containerPort = in.u16();
  grant.protocol =
      static_cast<PortProtocol>((flags & kProtocolByte) != 0 ? in.u8() : flags & kProtocolBits);
  grant.isStatic = (flags & kStatic) != 0;
  if ((flags & kCount) != 0) grant.count = static_cast<uint16_t>(in.varint());
  if ((flags & kName) != 0) grant.name = in.text();
  if ((flags & (kIPv4 | kIPv6)) != 0) grant.hostIp = readAddress(in, (flags & kIPv4) != 0);
  return grant;
}

}  // namespace

void PackedLease::packKey(const AttachmentKey& key, std::string& out) {
  putText(out, key.containerId);
  putText(out, key.ifname);
}

PackedLease PackedLease::pack(const Lease& lease, std::string_view pool, StringTable& strings) {
  std::string out;
  out.reserve(128 + lease.key.containerId.size() + lease.key.ifname.size());
  packKey(lease.key, out);
  putVarint(out, strings.intern(lease.pod.namespaceName));
  putSplit(out, lease.pod.name, podNameSplit(lease.pod.name), strings);
  putText(out, lease.pod.uid);
  putSplit(out, lease.netns, netnsSplit(lease.netns), strings);
  putVarint(out, strings.intern(pool));
  putVarint(out, lease.ports.size());
  for (const PortGrant& grant : lease.ports) putGrant(out, grant);
  putForwarding(out, lease, strings);

  auto bytes = std::make_unique_for_overwrite<uint8_t[]>(out.size());
  std::memcpy(bytes.get(), out.data(), out.size());
  return PackedLease(std::move(bytes));
}

std::string_view PackedLease::keyBytes() const {
  ByteReader in(bytes_.get());
  in.skipText();
  in.skipText();
  return {reinterpret_cast<const char*>(bytes_.get()),
          static_cast<std::size_t>(in.position() - bytes_.get())};
}

AttachmentKey PackedLease::key() const {
  ByteReader in(bytes_.get());
  AttachmentKey key;
  key.containerId = in.text();
  key.ifname = in.text();
  return key;
}

Lease PackedLease::unpack(const StringTable& strings) const {
  ByteReader in(bytes_.get());
  Lease lease;
  lease.key.containerId = in.text();
  lease.key.ifname = in.text();
  lease.pod.namespaceName = strings.text(static_cast<uint32_t>(in.varint()));
  lease.pod.name = readSplit(in, strings);
  lease.pod.uid = in.text();
  lease.netns = readSplit(in, strings);
  lease.pool = strings.text(static_cast<uint32_t>(in.varint()));
  const auto count = in.varint();
  lease.ports.reserve(count);
  for (uint64_t i = 0; i < count; ++i) lease.ports.push_back(readGrant(in));
  readForwarding(in, &strings, &lease, nullptr);
  return lease;
}

std::size_t PackedLease::size() const {
  if (empty()) return 0;
  ByteReader in(bytes_.get());
  in.skipText();  // containerId
  in.skipText();  // ifname
  in.varint();    // namespace
  in.varint();    // pod name head
  in.skipText();  // pod name tail
  in.skipText();  // uid
  in.varint();    // netns head
  in.skipText();  // netns tail
  in.varint();    // pool
  for (uint64_t count = in.varint(); count > 0; --count) readGrant(in);
  readForwarding(in, nullptr, nullptr, nullptr);
  return static_cast<std::size_t>(in.position() - bytes_.get());
}

void PackedLease::release(StringTable& strings) {
  if (empty()) return;
  // The ids in the order of the layout, the text between them skipped.
  ByteReader in(bytes_.get());
  in.skipText();                                        // containerId
  in.skipText();                                        // ifname
  strings.release(static_cast<uint32_t>(in.varint()));  // namespace
  strings.release(static_cast<uint32_t>(in.varint()));  // pod name head
  in.skipText();                                        // pod name tail
  in.skipText();                                        // uid
  strings.release(static_cast<uint32_t>(in.varint()));  // netns head
  in.skipText();                                        // netns tail
  strings.release(static_cast<uint32_t>(in.varint()));  // pool
  for (uint64_t count = in.varint(); count > 0; --count) readGrant(in);
  std::optional<uint32_t> network;
  readForwarding(in, nullptr, nullptr, &network);
  if (network) strings.release(*network);
  bytes_.reset();
}

}  // namespace hostport::agent::core
