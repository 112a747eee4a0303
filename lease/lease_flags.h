#pragma once
// The flags byte that follows a lease's grants in both binary encodings of a Lease: the store's
// durable codec (agent/store/lease_codec.h) and the allocator's packed form
// (agent/core/packed_lease.h). One definition, as LevelDB's log_format.h is its reader's and its
// writer's: a bit added for one encoding is seen by the other's tests at once. The grants' own
// flags stay each encoding's (the packed form folds the protocol into its byte).

#include <cstdint>

#include "lease/lease.h"

namespace hostport::lease_flags {

inline constexpr uint8_t kForwarding = 0x01;  // a forwarding record follows
inline constexpr uint8_t kSnat = 0x02;
inline constexpr uint8_t kMasqAll = 0x04;
inline constexpr uint8_t kPodV4 = 0x08;      // the pod's IPv4 prefix follows
inline constexpr uint8_t kPodV6 = 0x10;      // the pod's IPv6 prefix follows
inline constexpr uint8_t kNetnsId = 0x20;    // the netns device and inode follow
inline constexpr uint8_t kNotSticky = 0x40;  // the pod opted out of sticky ports
/// The one bit an encoding may give a meaning of its own (the packed form: conditions follow;
/// the durable codec always writes them and keeps the bit clear).
inline constexpr uint8_t kEncodingOwn = 0x80;
inline constexpr uint8_t kShared = 0x7f;
static_assert((kShared & kEncodingOwn) == 0);

/// The shared bits that describe `lease`.
inline uint8_t of(const Lease& lease) {
  uint8_t flags = (lease.netnsId.known() ? kNetnsId : 0) | (lease.sticky ? 0 : kNotSticky);
  if (const auto& forwarding = lease.forwarding) {
    flags |= kForwarding | (forwarding->snat ? kSnat : 0) | (forwarding->masqAll ? kMasqAll : 0) |
             (forwarding->podV4 ? kPodV4 : 0) | (forwarding->podV6 ? kPodV6 : 0);
  }
  return flags;
}

}  // namespace hostport::lease_flags
