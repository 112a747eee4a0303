#include "forwards/lease_forwards.h"

#include <gtest/gtest.h>

namespace hostport::forwards {
namespace {

IpAddress ip(const char* text) { return IpAddress::parse(text).value(); }

Lease leaseWithForwarding() {
  Lease lease;
  lease.key = {"c0ffee", "eth0"};
  lease.ports = {{"web", PortProtocol::kTcp, 30000, 80, 1, std::nullopt, false},
                 {"rtp", PortProtocol::kUdp, 20000, 5000, 2, ip("10.0.0.1"), false},
                 {"", PortProtocol::kTcpUdp, 53, 5353, 1, std::nullopt, true}};
  lease.forwarding = Forwarding{.network = "net",
                                .podV4 = IpPrefix{ip("10.88.0.5"), 16},
                                .podV6 = std::nullopt,
                                .snat = true,
                                .masqAll = false,
                                .conditionsV4 = "",
                                .conditionsV6 = ""};
  return lease;
}

std::vector<std::string> described(const nft::AttachmentPlan& plan) {
  std::vector<std::string> out;
  for (const auto& forward : plan.rules.forwards) out.push_back(nft::describe(forward));
  return out;
}

TEST(LeaseForwardsTest, ExpandsRangesAndTcpudpIntoOneMappingPerKernelPort) {
  const auto mappings = mappingsOf(leaseWithForwarding());
  ASSERT_EQ(mappings.size(), 5u);
  EXPECT_EQ(mappings[1], (nft::PortMapping{20000, 5000, Protocol::kUdp, ip("10.0.0.1")}));
  EXPECT_EQ(mappings[2], (nft::PortMapping{20001, 5001, Protocol::kUdp, ip("10.0.0.1")}));
  EXPECT_EQ(mappings[3], (nft::PortMapping{53, 5353, Protocol::kTcp, std::nullopt}));
  EXPECT_EQ(mappings[4], (nft::PortMapping{53, 5353, Protocol::kUdp, std::nullopt}));
}

TEST(LeaseForwardsTest, PlansWhatTheLeaseRecorded) {
  const auto plan = planOf(leaseWithForwarding());
  ASSERT_TRUE(plan.has_value()) << plan.error().message;
  EXPECT_EQ(plan->rules.owner, "c0ffee/eth0");
  EXPECT_EQ(described(*plan), (std::vector<std::string>{
                                  "tcp 0.0.0.0:30000 -> 10.88.0.5:80",
                                  "udp 10.0.0.1:20000 -> 10.88.0.5:5000",
                                  "udp 10.0.0.1:20001 -> 10.88.0.5:5001",
                                  "tcp 0.0.0.0:53 -> 10.88.0.5:5353",
                                  "udp 0.0.0.0:53 -> 10.88.0.5:5353",
                              }));
  ASSERT_EQ(plan->rules.masquerades.size(), 1u);  // snat: the pod's subnet and localhost
  EXPECT_EQ(nft::describe(plan->rules.masquerades[0]), "10.88.0.5 (pod subnet)");
  ASSERT_EQ(plan->rules.podSubnets.size(), 1u);
  EXPECT_EQ(plan->routeLocalnetFor, ip("10.88.0.5"));
  EXPECT_EQ(plan->udpHostPorts, (std::vector<uint16_t>{53, 20000, 20001}));
}

TEST(LeaseForwardsTest, HonoursMasqAllAndSnatOff) {
  Lease lease = leaseWithForwarding();
  lease.forwarding->snat = false;
  auto plan = planOf(lease);
  ASSERT_TRUE(plan.has_value());
  EXPECT_TRUE(plan->rules.masquerades.empty());
  EXPECT_FALSE(plan->routeLocalnetFor.has_value());
  lease.forwarding->masqAll = true;
  plan = planOf(lease);
  ASSERT_TRUE(plan.has_value());
  ASSERT_EQ(plan->rules.masquerades.size(), 1u);
  EXPECT_EQ(plan->rules.masquerades[0].scope, nft::MasqueradeScope::kEverySource);
}

TEST(LeaseForwardsTest, AnOwnerTagGivesBackItsKeyAndNothingElseDoes) {
  const AttachmentKey key{"0123abcd", "net1"};
  EXPECT_EQ(keyOfOwner(*ownerOf(key)), key);
  EXPECT_EQ(keyOfOwner("someone else's"), std::nullopt);
  EXPECT_EQ(keyOfOwner("0123abcd/"), std::nullopt);
  EXPECT_EQ(keyOfOwner(""), std::nullopt);
}

TEST(LeaseForwardsTest, RefusesALeaseWithoutForwardingAndHostileConditions) {
  Lease lease = leaseWithForwarding();
  lease.forwarding.reset();
  auto plan = planOf(lease);
  ASSERT_FALSE(plan.has_value());
  EXPECT_NE(plan.error().message.find("no forwarding record"), std::string::npos);

  lease = leaseWithForwarding();
  lease.forwarding->conditionsV4 = "ip saddr 10.0.0.0/8; flush ruleset";
  plan = planOf(lease);
  ASSERT_FALSE(plan.has_value());
  EXPECT_EQ(plan.error().code, ErrorCode::kInvalidArgument);
  EXPECT_NE(plan.error().message.find("forbidden character"), std::string::npos);

  lease = leaseWithForwarding();
  lease.forwarding->conditionsV4 = "ip saddr 10.0.0.0/8";
  plan = planOf(lease);
  ASSERT_TRUE(plan.has_value()) << plan.error().message;
  EXPECT_EQ(plan->rules.forwards[0].conditions, "ip saddr 10.0.0.0/8");
}

}  // namespace
}  // namespace hostport::forwards
