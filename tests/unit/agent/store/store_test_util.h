#pragma once
// Helpers shared by the store tests: sample leases and raw file access.

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>

#include "lease/lease.h"
#include "tests/support/file_text.h"

namespace hostport::agent::store::testing {

using hostport::test::readText;

inline IpAddress ip(const std::string& text) { return IpAddress::parse(text).value(); }

/// A realistic lease whose fields all depend on `i`, so leases differ and a mix-up shows.
inline Lease sampleLease(int i) {
  Lease lease;
  lease.key = {"c0ffee" + std::to_string(i) + std::string(58, 'a'), "eth" + std::to_string(i % 3)};
  lease.pod = {"ns-" + std::to_string(i % 7), "pod-" + std::to_string(i),
               "3f2a9c1e-0000-4000-8000-" + std::to_string(100000000000 + i)};
  lease.netns = "/var/run/netns/cni-" + std::to_string(i);
  lease.pool = i % 2 == 0 ? "default" : "media";
  lease.ports.push_back(PortGrant{.name = "http",
                                  .protocol = PortProtocol::kTcp,
                                  .hostPort = static_cast<uint16_t>(30000 + i % 2000),
                                  .containerPort = 8080,
                                  .count = 1,
                                  .hostIp = std::nullopt,
                                  .isStatic = false});
  if (i % 3 == 0) {
    lease.ports.push_back(PortGrant{.name = "rtp",
                                    .protocol = PortProtocol::kUdp,
                                    .hostPort = 20000,
                                    .containerPort = 20000,
                                    .count = 10,
                                    .hostIp = ip(i % 2 == 0 ? "10.0.0.7" : "fd00::7"),
                                    .isStatic = false});
  }
  if (i % 5 == 0) {
    lease.ports.push_back(PortGrant{.name = "",
                                    .protocol = PortProtocol::kTcpUdp,
                                    .hostPort = 53,
                                    .containerPort = 5353,
                                    .count = 1,
                                    .hostIp = std::nullopt,
                                    .isStatic = true});
  }
  if (i % 4 != 3) {  // one in four as an agent before forwarding records wrote them
    Forwarding forwarding;
    forwarding.network = i % 2 == 0 ? "k8s-pod-network" : "macvlan-" + std::to_string(i);
    forwarding.podV4 = IpPrefix{ip("10.88." + std::to_string(i % 250) + ".5"), 16};
    if (i % 3 == 0) forwarding.podV6 = IpPrefix{ip("fd00::" + std::to_string(i % 9000 + 1)), 64};
    forwarding.snat = i % 5 != 1;
    forwarding.masqAll = i % 7 == 2;
    if (i % 6 == 0) forwarding.conditionsV4 = "ip saddr 10.0.0.0/8";
    if (i % 12 == 0) forwarding.conditionsV6 = "ip6 saddr fd00::/8";
    lease.forwarding = std::move(forwarding);
    lease.netnsId = {.device = 4, .inode = 4026532000u + static_cast<uint64_t>(i)};
  }
  return lease;
}

inline void writeFile(const std::filesystem::path& path, const std::string& bytes) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
}

}  // namespace hostport::agent::store::testing
