#include "nft/attachment_plan.h"

#include <gtest/gtest.h>

namespace hostport::nft {
namespace {

PodTarget dualStack() {
  PodTarget target;
  target.v4 = *IpPrefix::parse("10.88.0.5/24");
  target.v6 = *IpPrefix::parse("fd00:88::5/64");
  return target;
}

PortMapping mapping(uint16_t host, uint16_t container, Protocol protocol = Protocol::kTcp,
                    const char* hostIp = nullptr) {
  PortMapping out{host, container, protocol, std::nullopt};
  if (hostIp != nullptr) out.hostIp = *IpAddress::parse(hostIp);
  return out;
}

std::vector<std::string> describeAll(const AttachmentPlan& plan) {
  std::vector<std::string> out;
  for (const auto& forward : plan.rules.forwards) out.push_back(describe(forward));
  return out;
}

TEST(AttachmentPlanTest, ForwardsEveryFamilyWhenNoHostIpIsGiven) {
  auto plan = planAttachment("o/eth0", {mapping(8080, 80)}, dualStack());
  ASSERT_TRUE(plan);
  EXPECT_EQ(describeAll(*plan), (std::vector<std::string>{"tcp 0.0.0.0:8080 -> 10.88.0.5:80",
                                                          "tcp [::]:8080 -> [fd00:88::5]:80"}));
  EXPECT_EQ(plan->rules.owner, "o/eth0");
}

TEST(AttachmentPlanTest, HostIpPicksItsFamilyOnly) {
  auto plan =
      planAttachment("o/eth0", {mapping(53, 53, Protocol::kUdp, "2001:db8::1")}, dualStack());
  ASSERT_TRUE(plan);
  EXPECT_EQ(describeAll(*plan),
            std::vector<std::string>{"udp [2001:db8::1]:53 -> [fd00:88::5]:53"});
  EXPECT_EQ(plan->udpHostPorts, std::vector<uint16_t>{53});
  EXPECT_FALSE(plan->routeLocalnetFor);  // nothing IPv4 is forwarded
}

TEST(AttachmentPlanTest, WarnsAndSkipsWhenTheContainerLacksTheFamily) {
  PodTarget v4Only;
  v4Only.v4 = *IpPrefix::parse("10.88.0.5/24");
  auto plan = planAttachment("o/eth0", {mapping(80, 80, Protocol::kTcp, "2001:db8::1")}, v4Only);
  ASSERT_TRUE(plan);
  EXPECT_TRUE(plan->rules.empty());
  ASSERT_EQ(plan->warnings.size(), 1u);
  EXPECT_EQ(plan->warnings[0],
            "skipping port mapping tcp [2001:db8::1]:80 -> 80: the container has no address of "
            "its family");
}

TEST(AttachmentPlanTest, WarnsWithTheHostEndpointAsPeopleWriteIt) {
  PodTarget v6Only;
  v6Only.v6 = *IpPrefix::parse("fd00:88::5/64");
  auto plan = planAttachment("o/eth0", {mapping(53, 5353, Protocol::kUdp, "192.0.2.1")}, v6Only);
  ASSERT_TRUE(plan);
  EXPECT_EQ(plan->warnings, std::vector<std::string>{"skipping port mapping udp 192.0.2.1:53 -> "
                                                     "5353: the container has no address of its "
                                                     "family"});
  plan = planAttachment("o/eth0", {mapping(8080, 80)}, PodTarget{});
  ASSERT_TRUE(plan);
  EXPECT_EQ(plan->warnings, std::vector<std::string>{"skipping port mapping tcp *:8080 -> 80: the "
                                                     "container has no address of its family"});
}

// A pod that asked for ports and can be forwarded none: an error for ADD and CHECK, not a lease
// that holds ports for nothing. One mapping it can forward is enough (portmap skips the rest).
TEST(AttachmentPlanTest, RequireForwardsRefusesAPlanThatForwardsNoneOfItsMappings) {
  PodTarget v4Only;
  v4Only.v4 = *IpPrefix::parse("10.88.0.5/24");
  const std::vector<std::pair<std::vector<PortMapping>, PodTarget>> nothingForwarded = {
      {{mapping(8080, 80)}, PodTarget{}},
      {{mapping(8080, 80), mapping(53, 53, Protocol::kUdp)}, PodTarget{}},
      {{mapping(80, 80, Protocol::kTcp, "2001:db8::1")}, v4Only},
  };
  for (const auto& [mappings, target] : nothingForwarded) {
    auto plan = planAttachment("o/eth0", mappings, target);
    ASSERT_TRUE(plan);
    const auto required = requireForwards(*plan);
    ASSERT_FALSE(required) << mappings.size();
    EXPECT_EQ(required.error().code, ErrorCode::kInvalidArgument);
    EXPECT_NE(required.error().message.find("none of the " + std::to_string(mappings.size()) +
                                            " port mapping(s) can be forwarded"),
              std::string::npos)
        << required.error().message;
  }

  auto some = planAttachment(
      "o/eth0", {mapping(80, 80, Protocol::kTcp, "2001:db8::1"), mapping(8080, 80)}, v4Only);
  ASSERT_TRUE(some);
  EXPECT_TRUE(requireForwards(*some));
  auto none = planAttachment("o/eth0", {}, PodTarget{});
  ASSERT_TRUE(none);
  EXPECT_TRUE(requireForwards(*none)) << "no mapping asked for, none to forward";
}

TEST(AttachmentPlanTest, MasqueradesSubnetPeersAndLocalhostWithSnat) {
  auto plan = planAttachment("o/eth0", {mapping(8080, 80)}, dualStack());
  ASSERT_TRUE(plan);
  std::vector<std::string> masquerades;
  for (const auto& m : plan->rules.masquerades) masquerades.push_back(describe(m));
  EXPECT_EQ(masquerades,
            (std::vector<std::string>{"10.88.0.5 (pod subnet)", "fd00:88::5 (pod subnet)"}));
  EXPECT_EQ(plan->rules.podSubnets,
            (std::vector{*IpPrefix::parse("10.88.0.0/24"), *IpPrefix::parse("fd00:88::/64")}));
  EXPECT_EQ(plan->routeLocalnetFor, IpAddress::parse("10.88.0.5").value());
}

TEST(AttachmentPlanTest, MasqAllMasqueradesEverySourceAndSnatOffNone) {
  PodTarget target = dualStack();
  target.masqAll = true;
  auto plan = planAttachment("o/eth0", {mapping(8080, 80)}, target);
  ASSERT_TRUE(plan);
  ASSERT_EQ(plan->rules.masquerades.size(), 2u);
  EXPECT_EQ(describe(plan->rules.masquerades[0]), "10.88.0.5 (every source)");
  EXPECT_TRUE(plan->rules.podSubnets.empty());

  target.masqAll = false;
  target.snat = false;
  plan = planAttachment("o/eth0", {mapping(8080, 80)}, target);
  ASSERT_TRUE(plan);
  EXPECT_TRUE(plan->rules.masquerades.empty());
  EXPECT_TRUE(plan->rules.podSubnets.empty());
  EXPECT_FALSE(plan->routeLocalnetFor);
}

TEST(AttachmentPlanTest, CarriesConditionsPerFamily) {
  PodTarget target = dualStack();
  target.conditionsV4 = "ip saddr 192.0.2.0/24";
  auto plan = planAttachment("o/eth0", {mapping(8080, 80)}, target);
  ASSERT_TRUE(plan);
  EXPECT_EQ(plan->rules.forwards[0].conditions, "ip saddr 192.0.2.0/24");
  EXPECT_EQ(plan->rules.forwards[1].conditions, "");
}

TEST(AttachmentPlanTest, DuplicateMappingsCollapseAndClashingOnesFail) {
  auto same = planAttachment("o/eth0", {mapping(8080, 80), mapping(8080, 80)}, dualStack());
  ASSERT_TRUE(same);
  EXPECT_EQ(same->rules.forwards.size(), 2u);
  auto clash = planAttachment("o/eth0", {mapping(8080, 80), mapping(8080, 81)}, dualStack());
  ASSERT_FALSE(clash);
  EXPECT_EQ(clash.error().code, ErrorCode::kInvalidArgument);
  EXPECT_NE(clash.error().message.find("8080"), std::string::npos);
  // Same port, other protocol: no clash.
  EXPECT_TRUE(
      planAttachment("o/eth0", {mapping(53, 53), mapping(53, 53, Protocol::kUdp)}, dualStack()));
}

}  // namespace
}  // namespace hostport::nft
