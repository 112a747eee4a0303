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

/// The chains whose rules are the layout's own; `conditional` holds the attachments' rules.
inline constexpr std::string_view kFixedChains[] = {"hostports", "prerouting", "output",
                                                    "postrouting"};

std::string_view nftFamily(Family family);  // "ip" / "ip6"

// The layout of `table ip hostport`, in nft's words (`ip6`, `ipv6_addr` and no 127/8 rule for
// IPv6). layout_messages.h writes it over netlink; tests/netns/layout_netns_test.cc checks that
// the kernel ends up holding what nft makes of this text.
//
//   map ports   { type inet_proto . inet_service : ipv4_addr . inet_service; }
//   map ipports { type ipv4_addr . inet_proto . inet_service : ipv4_addr . inet_service; }
//   set snatpods { type ipv4_addr; }
//   set masqall  { type ipv4_addr; }
//   set podnets  { type ipv4_addr . ipv4_addr; flags interval; }
//   chain conditional { }
//   chain hostports {
//     jump conditional
//     dnat ip to ip daddr . meta l4proto . th dport map @ipports
//     dnat ip to meta l4proto . th dport map @ports
//   }
//   # Only traffic addressed to this node is ours: the lesson of portmap's CVE-2025-67499.
//   chain prerouting {
//     type nat hook prerouting priority dstnat;
//     fib daddr type local jump hostports
//   }
//   chain output {
//     type nat hook output priority -100;
//     fib daddr type local jump hostports
//   }
//   chain postrouting {
//     type nat hook postrouting priority srcnat;
//     ct status dnat ip daddr @masqall masquerade
//     # Hairpin and same-bridge peers, whose replies would otherwise bypass the host: the source
//     # and the pod share one of the pod subnets.
//     ct status dnat ip daddr @snatpods ip saddr . ip daddr @podnets masquerade
//     # 127.0.0.1 cannot leave the node (route_localnet lets it be forwarded). IPv6 has no such
//     # route, so ::1 is never forwarded.
//     ct status dnat ip daddr @snatpods ip saddr 127.0.0.0/8 masquerade
//   }

}  // namespace hostport::nft
