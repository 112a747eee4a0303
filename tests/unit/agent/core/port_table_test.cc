#include "agent/core/port_table.h"

#include <gtest/gtest.h>

#include <utility>
#include <vector>

namespace hostport::agent::core {
namespace {

IpAddress ip(const char* text) { return IpAddress::parse(text).value(); }

PortGrant dynamicGrant(uint16_t hostPort, uint16_t count = 1) {
  return PortGrant{"p", PortProtocol::kTcp, hostPort, 8080, count, std::nullopt, false};
}

PortGrant staticGrant(uint16_t hostPort, PortProtocol protocol = PortProtocol::kTcp,
                      std::optional<IpAddress> hostIp = std::nullopt) {
  return PortGrant{"", protocol, hostPort, 80, 1, std::move(hostIp), true};
}

Lease leaseOf(std::vector<PortGrant> grants) {
  Lease out;
  out.key = {"c", "eth0"};
  out.ports = std::move(grants);
  return out;
}

class PortTableTest : public ::testing::Test {
 protected:
  // Applies `lease` at `slot` and returns the numbers reported as newly held.
  std::vector<uint16_t> apply(uint32_t slot, const Lease& lease) {
    std::vector<uint16_t> held;
    table_.apply(slot, lease, [&](uint16_t port) { held.push_back(port); });
    return held;
  }
  // Unapplies and returns the numbers reported as free, each with whether it was dynamic.
  std::vector<std::pair<uint16_t, bool>> unapply(uint32_t slot, const Lease& lease) {
    std::vector<std::pair<uint16_t, bool>> freed;
    table_.unapply(slot, lease,
                   [&](uint16_t port, bool dynamic) { freed.emplace_back(port, dynamic); });
    return freed;
  }

  PortTable table_;
};

TEST_F(PortTableTest, HoldsADynamicRunForEveryProtocolAndAddress) {
  const Lease lease = leaseOf({dynamicGrant(30000, 3)});
  EXPECT_EQ(apply(7, lease), (std::vector<uint16_t>{30000, 30001, 30002}));
  for (const Protocol protocol : kAllProtocols) {
    EXPECT_EQ(table_.holderOf(protocol, 30001, std::nullopt), 7u);
    EXPECT_EQ(table_.holderOf(protocol, 30002, ip("10.0.0.1")), 7u);
  }
  EXPECT_EQ(table_.holderOf(Protocol::kTcp, 30003, std::nullopt), std::nullopt);
  EXPECT_TRUE(table_.held().test(30000));
  EXPECT_TRUE(table_.held().test(30002));
  EXPECT_FALSE(table_.held().test(30003));
  EXPECT_EQ(table_.anyHolderOf(30000), std::pair(7u, Protocol::kTcp));
}

TEST_F(PortTableTest, ReportsDynamicPortsFreedAsDynamic) {
  const Lease lease = leaseOf({dynamicGrant(30000, 2), staticGrant(80)});
  apply(3, lease);
  EXPECT_EQ(unapply(3, lease),
            (std::vector<std::pair<uint16_t, bool>>{{30000, true}, {30001, true}, {80, false}}));
  EXPECT_FALSE(table_.held().test(30000));
  EXPECT_FALSE(table_.held().test(80));
  EXPECT_EQ(table_.anyHolderOf(30000), std::nullopt);
  EXPECT_EQ(table_.anyHolderOf(80), std::nullopt);
}

TEST_F(PortTableTest, HoldsAStaticClaimOnlyInItsProtocols) {
  apply(1, leaseOf({staticGrant(53, PortProtocol::kUdp)}));
  EXPECT_EQ(table_.holderOf(Protocol::kUdp, 53, std::nullopt), 1u);
  EXPECT_EQ(table_.holderOf(Protocol::kTcp, 53, std::nullopt), std::nullopt);
  EXPECT_EQ(table_.anyHolderOf(53), std::pair(1u, Protocol::kUdp));

  apply(2, leaseOf({staticGrant(443, PortProtocol::kTcpUdp)}));
  EXPECT_EQ(table_.holderOf(Protocol::kTcp, 443, std::nullopt), 2u);
  EXPECT_EQ(table_.holderOf(Protocol::kUdp, 443, std::nullopt), 2u);
  EXPECT_EQ(table_.holderOf(Protocol::kSctp, 443, std::nullopt), std::nullopt);
}

TEST_F(PortTableTest, OverlapsStaticClaimsOnlyOnTheSameOrAnyAddress) {
  apply(1, leaseOf({staticGrant(8080, PortProtocol::kTcp, ip("10.0.0.1"))}));
  EXPECT_EQ(table_.holderOf(Protocol::kTcp, 8080, ip("10.0.0.1")), 1u);
  EXPECT_EQ(table_.holderOf(Protocol::kTcp, 8080, ip("10.0.0.2")), std::nullopt);
  EXPECT_EQ(table_.holderOf(Protocol::kTcp, 8080, std::nullopt), 1u);
  // 0.0.0.0 and :: are every address, like none.
  EXPECT_EQ(table_.holderOf(Protocol::kTcp, 8080, ip("0.0.0.0")), 1u);
  EXPECT_EQ(table_.holderOf(Protocol::kTcp, 8080, ip("::")), 1u);

  apply(2, leaseOf({staticGrant(9090, PortProtocol::kTcp, ip("::"))}));
  EXPECT_EQ(table_.holderOf(Protocol::kTcp, 9090, ip("10.0.0.9")), 2u);
}

TEST_F(PortTableTest, ReportsANumberOnlyWhenTheFirstHolderComesAndTheLastGoes) {
  const Lease a = leaseOf({staticGrant(8080, PortProtocol::kTcp, ip("10.0.0.1"))});
  const Lease b = leaseOf({staticGrant(8080, PortProtocol::kTcp, ip("10.0.0.2"))});
  const Lease c = leaseOf({staticGrant(8080, PortProtocol::kUdp)});
  EXPECT_EQ(apply(1, a), std::vector<uint16_t>{8080});
  EXPECT_TRUE(apply(2, b).empty());
  EXPECT_TRUE(apply(3, c).empty());
  EXPECT_TRUE(unapply(1, a).empty());
  EXPECT_EQ(table_.holderOf(Protocol::kTcp, 8080, ip("10.0.0.1")), std::nullopt);
  EXPECT_EQ(table_.holderOf(Protocol::kTcp, 8080, ip("10.0.0.2")), 2u);
  EXPECT_TRUE(unapply(2, b).empty());
  EXPECT_TRUE(table_.held().test(8080));
  EXPECT_EQ(unapply(3, c), (std::vector<std::pair<uint16_t, bool>>{{8080, false}}));
  EXPECT_FALSE(table_.held().test(8080));
}

TEST_F(PortTableTest, TakesBackOnlyTheHoldsOfTheSlotGiven) {
  const Lease lease = leaseOf({staticGrant(80)});
  apply(1, lease);
  apply(2, lease);  // a second lease with the same claim (restore does not check this table)
  EXPECT_TRUE(unapply(1, lease).empty());
  EXPECT_EQ(table_.holderOf(Protocol::kTcp, 80, std::nullopt), 2u);
  EXPECT_TRUE(unapply(1, lease).empty());  // nothing of slot 1 is left to take
  EXPECT_EQ(unapply(2, lease), (std::vector<std::pair<uint16_t, bool>>{{80, false}}));
}

TEST_F(PortTableTest, PrefersTheDynamicHolderOfANumber) {
  apply(1, leaseOf({staticGrant(30000, PortProtocol::kUdp)}));
  apply(2, leaseOf({dynamicGrant(30000)}));
  EXPECT_EQ(table_.holderOf(Protocol::kUdp, 30000, std::nullopt), 2u);
  EXPECT_EQ(table_.anyHolderOf(30000), std::pair(2u, Protocol::kTcp));
}

TEST_F(PortTableTest, ReachesTheTopOfThePortSpace) {
  const Lease lease = leaseOf({dynamicGrant(65534, 2)});
  EXPECT_EQ(apply(0, lease), (std::vector<uint16_t>{65534, 65535}));
  EXPECT_EQ(table_.holderOf(Protocol::kTcp, 65535, std::nullopt), 0u);
  EXPECT_EQ(unapply(0, lease).size(), 2u);
}

}  // namespace
}  // namespace hostport::agent::core
