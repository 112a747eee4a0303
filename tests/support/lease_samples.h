#pragma once
// One lease with every field set, each away from its default, for the tests of every encoding of
// a Lease (the wire's JSON, the store's codec, the allocator's packed form): a codec that forgets
// a field, or a flag bit, fails on it.

#include "lease/lease.h"

namespace hostport::test {

/// Every optional set, both families, a range, a hostIp of each family, conditions, a netns id,
/// and sticky = false.
inline Lease leaseWithEveryField() {
  Lease lease;
  lease.key = {"0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef", "net1"};
  lease.pod = {"games-eu", "relay-7d4b9c8f6-x2x9k", "9f8e7d6c-5b4a-4321-8765-0123456789ab"};
  lease.netns = "/var/run/netns/cni-1c2d3e4f-5a6b-7c8d-9e0f-a1b2c3d4e5f6";
  lease.pool = "games";
  lease.ports = {
      {"", PortProtocol::kTcp, 8080, 80, 1, *IpAddress::parse("192.0.2.7"), true},
      {"rtp", PortProtocol::kUdp, 40000, 20000, 10, std::nullopt, false},
      {"ctl", PortProtocol::kTcpUdp, 40100, 7000, 1, *IpAddress::parse("2001:db8::7"), false},
      {"sig", PortProtocol::kSctp, 40200, 9000, 1, std::nullopt, false},
  };
  lease.forwarding = Forwarding{.network = "games-net",
                                .podV4 = IpPrefix::parse("10.88.3.17/24").value(),
                                .podV6 = IpPrefix::parse("fd00:88::17/64").value(),
                                .snat = false,
                                .masqAll = true,
                                .conditionsV4 = "ip saddr 198.51.100.0/24",
                                .conditionsV6 = "ip6 saddr 2001:db8:1::/48"};
  lease.netnsId = {.device = 4, .inode = 4026532801};
  lease.sticky = false;
  return lease;
}

}  // namespace hostport::test
