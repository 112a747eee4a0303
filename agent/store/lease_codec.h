#pragma once
// The binary encoding of leases and journal records. Design note:
// - Compact and fast to decode: startup replays tens of thousands of records, so no JSON.
// - Little-endian integers; strings are a u16 length then bytes, bounded per field, so a hostile
//   or corrupt length can never make the decoder allocate or read past the input.
// - Every journal record starts with a codec version byte, so a format change is seen, never
//   guessed at: an agent refuses a version it does not read. Versions 1 and 2 were never released
//   and are not read (docs/design.md, "Version skew").
// - Decoding is strict: unknown enum values, unknown flag bits, port ranges past 65535 and
//   trailing bytes are errors (kDecode). Encoding checks the same bounds (kInvalidArgument), so
//   we never write what we could not read back.
//
// Lease, version 3:
//   str containerId, str ifname, str pod.namespace, str pod.name, str pod.uid, str netns, str pool
//   u16 grant count (<= kMaxPortsPerRequest), then per grant:
//     str name (<= kMaxGrantNameBytes), u8 protocol (PortProtocol), u16 hostPort,
//     u16 containerPort, u16 count (>= 1), u8 flags (bit0 static, bit1 hostIp follows),
//     [u8 family (4 | 6), 4 or 16 address bytes in network order]
//   u8 flags (bit0 forwarding follows, bit1 snat, bit2 masqAll, bit3 pod IPv4 follows, bit4 pod
//   IPv6 follows, bit5 netns id follows, bit6 not sticky; bits 1-4 only with bit0)
//   [str network, [u8 prefix length, 4 bytes], [u8 prefix length, 16 bytes], str conditionsV4,
//    str conditionsV6]
//   [u64 netns device, u64 netns inode (not 0)]
// Journal record payload: u8 version (3), u8 kind (1 grant, 2 release), then a lease (grant)
// or
//   str containerId, str ifname (release: only the key matters).
// Sticky entry (snapshot format 3, snapshot.h): str namespace, str name, str pool, u16 row count
//   (<= kMaxPortsPerRequest, >= 1), then per row: str name, u8 protocol, u16 hostPort, u16 count.

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include "common/error.h"
#include "lease/lease.h"
#include "lease/sticky_entry.h"

namespace hostport::agent::store {

inline constexpr uint8_t kCodecVersion = 3;      // what this agent writes, and the one it reads
inline constexpr size_t kMaxStringBytes = 4096;  // PATH_MAX: a netns path is the longest field
inline constexpr size_t kMaxGrantNameBytes = 255;
/// No valid record comes near this (the bounds above cap a lease below 100 KiB); the journal
/// treats a larger length field as corruption.
inline constexpr size_t kMaxRecordBytes = 1u << 20;

/// One journal entry: a lease granted (or replaced), or released.
struct JournalRecord {
  enum class Kind : uint8_t { kGrant = 1, kRelease = 2 };
  Kind kind = Kind::kGrant;
  Lease lease;  // a release uses lease.key only
  friend bool operator==(const JournalRecord&, const JournalRecord&) = default;
};

/// Appends the encoding of `lease` to `out`; on error `out` is left as it was.
Result<void> encodeLease(const Lease& lease, std::string& out);
/// Decodes exactly one lease occupying all of `bytes`.
Result<Lease> decodeLease(std::string_view bytes);

/// Appends the encoding of a sticky entry (forget must be false: a snapshot keeps only what is
/// remembered); on error `out` is left as it was.
Result<void> encodeStickyEntry(const StickyEntry& entry, std::string& out);
/// Decodes exactly one sticky entry occupying all of `bytes`.
Result<StickyEntry> decodeStickyEntry(std::string_view bytes);

/// Appends a journal record payload (version, kind, body) to `out`; on error `out` is unchanged.
Result<void> encodeRecord(const JournalRecord& record, std::string& out);
/// Decodes a journal record payload occupying all of `bytes`.
Result<JournalRecord> decodeRecord(std::string_view bytes);

}  // namespace hostport::agent::store
