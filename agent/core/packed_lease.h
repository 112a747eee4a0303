#pragma once
// A lease as the allocator holds it: one heap block of packed bytes, under 100 for a typical pod
// (a Lease with its strings and grant vector takes ~560), so 50,000 leases fit in a few MiB.
// Lease stays the value type everywhere else: the allocator packs on the way in and unpacks on
// the way out. Memory-only, read back by the same build (see packed_text.h); the store's codec
// is the durable format.
//
// Text that many leases share is interned (string_table.h): whole for the pool and the pod
// namespace; for the pod name and the netns path, a head, split off where the text of sibling
// pods usually starts to differ:
//   pod name  up to its last '-': "web-7d4b9c8f6-" of "web-7d4b9c8f6-x2x9k", "pg-" of "pg-0";
//   netns     up to a trailing UUID if there is one ("/var/run/netns/cni-" of
//             "/var/run/netns/cni-<uuid>"), else up to its last '/' ("/proc/1234/ns/").
//
// Layout, in order:
//   the key: text containerId, text ifname
//   varint pod namespace, varint pod name head, text pod name tail, text pod uid
//   varint netns head, text netns tail
//   varint pool
//   varint grant count, then per grant:
//     u8 flags: bits 0-1 protocol, 0x04 static, 0x08 count follows (else 1), 0x10 name follows,
//               0x20 IPv4 hostIp follows, 0x40 IPv6 hostIp follows, 0x80 protocol byte follows
//               (a value above 3, which no parser makes, is still kept as it was)
//     u16 hostPort, u16 containerPort, [u8 protocol], [varint count], [text name],
//     [4 or 16 address bytes]
//   u8 flags: lease/lease_flags.h (0x01 forwarding follows, 0x02 snat, 0x04 masqAll, 0x08 pod
//             IPv4, 0x10 pod IPv6, 0x20 netns id follows, 0x40 not sticky), and 0x80 conditions
//             follow
//   [varint network, [u8 prefix length, 4 bytes], [u8 prefix length, 16 bytes],
//    [text conditionsV4, text conditionsV6]], [varint netns device, varint netns inode]
// (varint: an interned id; text: packed_text.h.)

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>

#include "agent/core/string_table.h"
#include "lease/lease.h"

namespace hostport::agent::core {

class PackedLease {
 public:
  PackedLease() = default;

  /// Packs `lease` with `pool` in place of lease.pool, taking references in `strings`; give
  /// them back with release().
  static PackedLease pack(const Lease& lease, std::string_view pool, StringTable& strings);
  /// Appends the packed form of `key`: equal keys and only they give equal bytes, the same as
  /// keyBytes() of their leases.
  static void packKey(const AttachmentKey& key, std::string& out);

  bool empty() const { return bytes_ == nullptr; }
  /// The bytes held (the heap block's size), for tests and accounting.
  std::size_t size() const;
  std::string_view keyBytes() const;
  AttachmentKey key() const;
  Lease unpack(const StringTable& strings) const;
  /// Gives back the references pack() took and empties this lease.
  void release(StringTable& strings);

 private:
  explicit PackedLease(std::unique_ptr<uint8_t[]> bytes) : bytes_(std::move(bytes)) {}
  std::unique_ptr<uint8_t[]> bytes_;
};

}  // namespace hostport::agent::core
