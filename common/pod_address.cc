#include "common/pod_address.h"

#include <array>
#include <string_view>

namespace hostport {
namespace {

/// A block of addresses no pod may have, and what to say about one that is in it.
struct Block {
  std::string_view cidr;
  std::string_view problem;
};

constexpr std::array kRefusedV4 = {
    Block{"0.0.0.0/8", "is in 0.0.0.0/8, which names this host, never a pod"},
    Block{"127.0.0.0/8", "is a loopback address: a DNAT to it reaches the node's own services"},
    Block{"169.254.0.0/16",
          "is link-local: never routed to a pod, and 169.254.169.254 is a cloud's metadata "
          "service"},
    Block{"224.0.0.0/4", "is a multicast address"},
    Block{"255.255.255.255/32", "is the broadcast address"},
};

constexpr std::array kRefusedV6 = {
    Block{"::/128", "is the unspecified address"},
    Block{"::1/128", "is the loopback address: a DNAT to it reaches the node's own services"},
    Block{"::ffff:0:0/96", "is an IPv4-mapped address, which never travels as IPv6"},
    Block{"fe80::/10", "is link-local: never routed to a pod without an interface"},
    Block{"ff00::/8", "is a multicast address"},
};

/// A block parsed, once: the reconciler judges every lease on every compare.
struct ParsedBlock {
  IpPrefix prefix;
  std::string_view problem;
};

template <std::size_t N>
std::array<ParsedBlock, N> parsed(const std::array<Block, N>& blocks) {
  std::array<ParsedBlock, N> out{};
  for (std::size_t i = 0; i < N; ++i)
    out[i] = {*IpPrefix::parse(blocks[i].cidr), blocks[i].problem};
  return out;
}

Problem blockProblem(const IpAddress& address) {
  static const auto v4 = parsed(kRefusedV4);
  static const auto v6 = parsed(kRefusedV6);
  const auto check = [&](const auto& blocks) -> Problem {
    for (const ParsedBlock& block : blocks) {
      if (block.prefix.contains(address)) return block.problem;
    }
    return std::nullopt;
  };
  return address.family() == Family::kIPv4 ? check(v4) : check(v6);
}

/// The subnet's own special addresses: its network address (IPv6's Subnet-Router anycast,
/// RFC 4291) and IPv4's directed broadcast. A /31 or /127 (RFC 3021, 6164) and a host route
/// have none.
Problem subnetEndProblem(const IpPrefix& address) {
  const bool v4 = address.address.family() == Family::kIPv4;
  if (address.length >= (v4 ? 31 : 127)) return std::nullopt;
  if (address.address == address.network().address) {
    return v4 ? "is its subnet's network address" : "is its subnet's Subnet-Router anycast address";
  }
  if (v4 && address.address == address.lastAddress()) return "is its subnet's broadcast address";
  return std::nullopt;
}

}  // namespace

Problem podAddressProblem(const IpPrefix& address) {
  const bool v4 = address.address.family() == Family::kIPv4;
  if (Problem problem = blockProblem(address.address)) return problem;
  if (address.length < (v4 ? kWidestPodPrefixV4 : kWidestPodPrefixV6)) {
    return v4 ? "has a prefix wider than /8, which no pod subnet is: every source inside it would "
                "be masqueraded toward the node's pods"
              : "has a prefix wider than /48, which no pod subnet is: every source inside it would "
                "be masqueraded toward the node's pods";
  }
  return subnetEndProblem(address);
}

}  // namespace hostport
