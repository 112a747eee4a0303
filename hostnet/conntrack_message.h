#pragma once
// Pure builders and parsers for the ctnetlink messages the UDP conntrack flush needs. No socket
// here (katran style): every function maps values to bytes or bytes to values, and is tested byte
// by byte in tests/unit/hostnet/conntrack_message_test.cc.
//
// Design note:
// - A ctnetlink DELETE without a tuple is a flush of the whole table. buildConntrackDelete
//   therefore refuses an entry whose original tuple lacks an address or protocol nest, so a bug
//   upstream cannot turn "delete this flow" into "delete every flow on the node".
// - The delete carries the kernel's own CTA_TUPLE_ORIG bytes verbatim (plus CTA_ZONE and CTA_ID
//   when the dump had them), instead of a tuple rebuilt from parsed fields: the kernel then looks
//   up exactly what it showed us, zone included, and CTA_ID makes it refuse (ENOENT) a newer flow
//   that reuses the tuple after the dump -- a flow that may already be correctly DNATed.
// - The dump may ask the kernel to filter (CTA_FILTER, Linux >= 5.9: UDP + original destination
//   port). Callers must still filter with isUdpToPort(): older kernels ignore the attribute, and
//   the kernel does not promise to.

#include <array>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "common/error.h"
#include "common/ip_address.h"

namespace hostport::hostnet {

/// One conntrack entry as far as the flush cares: its original-direction tuple.
struct ConntrackEntry {
  uint8_t l4proto = 0;  // IPPROTO_*, any protocol (ICMP flows have entries too)
  IpAddress origSrc;
  IpAddress origDst;
  uint16_t origSrcPort = 0;  // host order; 0 for protocols without ports
  uint16_t origDstPort = 0;
  std::optional<uint16_t> zone;         // CTA_ZONE, host order
  std::optional<uint32_t> id;           // CTA_ID, host order (an opaque kernel id)
  std::vector<std::byte> rawOrigTuple;  // payload of CTA_TUPLE_ORIG, verbatim from the kernel

  /// The message's family (nfgen_family), which both addresses have: a parsed entry's tuple
  /// is of that family or the message is refused.
  Family family() const { return origSrc.family(); }

  /// "udp 10.0.0.1:40000 -> 10.0.0.2:53", for error messages and logs.
  std::string describe() const;
};

/// An IPCTNL_MSG_CT_GET dump request for one family. With `udpDstPort`, it also asks the kernel
/// to return only UDP entries whose original destination port is that port (see design note).
std::vector<std::byte> buildConntrackDump(Family family,
                                          std::optional<uint16_t> udpDstPort = std::nullopt);
/// The same for every UDP entry of one family (the filter on the protocol alone): a flush of
/// several ports walks the table once with it, where each port's own dump walks it again.
std::vector<std::byte> buildUdpConntrackDump(Family family);

/// Parses one ctnetlink conntrack message (IPCTNL_MSG_CT_NEW as in a dump, or CT_DELETE). Fails
/// cleanly on truncated or malformed bytes; never reads outside `message`.
Result<ConntrackEntry> parseConntrackMessage(std::span<const std::byte> message);

/// Whether the flush must delete `entry`: UDP with original destination port `port`.
bool isUdpToPort(const ConntrackEntry& entry, uint16_t port);

/// An IPCTNL_MSG_CT_DELETE request (NLM_F_REQUEST | NLM_F_ACK) for exactly `entry`: its raw
/// original tuple, its zone and its id. Fails for an entry without a usable tuple.
Result<std::vector<std::byte>> buildConntrackDelete(const ConntrackEntry& entry);

}  // namespace hostport::hostnet
