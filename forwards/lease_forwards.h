#pragma once
// A lease is the truth and the nftables table its projection: these functions turn a lease into
// the exact elements and rules its attachment owns, so the agent can lay them out again at any
// time (after a crash, a flushed map, a deleted table) and remove exactly them at release.

#include <optional>
#include <string_view>
#include <vector>

#include "common/error.h"
#include "lease/lease.h"
#include "nft/attachment_plan.h"

namespace hostport::forwards {

/// The port mappings a lease grants: one per port of a range and per kernel protocol (tcpudp
/// gives a TCP and a UDP mapping with the same numbers).
std::vector<nft::PortMapping> mappingsOf(const Lease& lease);

/// The pod end of the forwards, as the lease recorded it at ADD.
nft::PodTarget podTargetOf(const Forwarding& forwarding);

/// The owner tag of the lease's elements ("containerID/ifname"), as nft::makeOwner checks it.
Result<std::string> ownerOf(const AttachmentKey& key);
/// The attachment whose owner tag `owner` is (ownerOf()'s inverse); nullopt for text that is not
/// one of our tags.
std::optional<AttachmentKey> keyOfOwner(std::string_view owner);

/// Everything the lease's attachment owns in table ip/ip6 hostport. kInvalidArgument for a lease
/// without a forwarding record (it forwards nothing) or whose recorded conditions do not pass
/// nft::validateConditions.
Result<nft::AttachmentPlan> planOf(const Lease& lease);

}  // namespace hostport::forwards
