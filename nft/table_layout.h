#pragma once
// The fixed part of our tables: chains, maps and the masquerade set. Only their elements change
// at run time, so the datapath lookup stays O(1) however many pods there are.

#include <string>
#include <string_view>

#include "common/ip_address.h"

namespace hostport::nft {

inline constexpr std::string_view kTableName = "hostport";
inline constexpr std::string_view kPortsMap = "ports";          // proto . port : addr . port
inline constexpr std::string_view kHostIpPortsMap = "ipports";  // hostIP . proto . port : ...
// Masquerades after DNAT, by pod address (hash sets: O(1) to add and delete at any size). The
// subnets are few and shared, so only they sit in an interval set (whose deletes cost time in
// proportion to its size; see docs/design.md).
inline constexpr std::string_view kSnatPodsSet = "snatpods";   // pod IP: snat
inline constexpr std::string_view kMasqAllSet = "masqall";     // pod IP: masqAll
inline constexpr std::string_view kPodSubnetsSet = "podnets";  // subnet . subnet
inline constexpr std::string_view kConditionalChain = "conditional";

std::string_view nftFamily(Family family);  // "ip" / "ip6"

/// Text commands that create the table of one family, or bring it back to the fixed layout,
/// in one transaction. They flush and refill only the fixed chains: elements and the rules in
/// `conditional` survive.
std::string tableLayoutCommands(Family family);

}  // namespace hostport::nft
