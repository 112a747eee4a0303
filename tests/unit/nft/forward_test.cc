#include "nft/forward.h"

#include <gtest/gtest.h>

#include "common/quote.h"

namespace hostport::nft {
namespace {

TEST(ForwardTest, ParsesProtocolsCaseInsensitively) {
  EXPECT_EQ(parseProtocol("TCP"), Protocol::kTcp);
  EXPECT_EQ(parseProtocol("udp"), Protocol::kUdp);
  EXPECT_EQ(parseProtocol("Sctp"), Protocol::kSctp);
  auto bad = parseProtocol("icmp");
  ASSERT_FALSE(bad);
  EXPECT_NE(bad.error().message.find("\"icmp\""), std::string::npos);
}

TEST(ForwardTest, BuildsOwnerFromContainerIdAndIfname) {
  EXPECT_EQ(makeOwner("3f2a_b.c-d", "eth0"), "3f2a_b.c-d/eth0");
  EXPECT_EQ(makeOwner(std::string(100, 'a'), "net1@x"), std::string(100, 'a') + "/net1@x");
}

TEST(ForwardTest, RejectsOwnersThatCouldEscapeAnNftComment) {
  for (const auto* id : {"", "-lead", "a\"b", "a b", "a;b", "a/b", "a\nb"}) {
    auto owner = makeOwner(id, "eth0");
    ASSERT_FALSE(owner) << id;
    EXPECT_EQ(owner.error().code, ErrorCode::kInvalidEnvironment);
  }
  EXPECT_FALSE(makeOwner(std::string(101, 'a'), "eth0"));
  for (const auto* ifname :
       {"", ".", "..", "a/b", "a:b", "a b", "a\"b", "a\\b", "sixteen-chars-xx"}) {
    EXPECT_FALSE(makeOwner("abc", ifname)) << ifname;
  }
}

TEST(ForwardTest, SaysWhatIsWrongWithAnOwner) {
  EXPECT_EQ(makeOwner("a/b", "eth0").error().message,
            "container ID \"a/b\" must be 1-100 characters of [A-Za-z0-9_.-], starting "
            "alphanumeric");
  EXPECT_EQ(makeOwner("abc", "a/b").error().message, "interface name \"a/b\" must not contain '/'");
  EXPECT_EQ(makeOwner("abc", "eth\n0").error().message,
            "interface name \"eth\\n0\" must not contain whitespace");
  EXPECT_EQ(makeOwner(std::string(101, 'a'), "eth0").error().message,
            "container ID \"" + std::string(kMaxEchoedBytes, 'a') +
                "\"... must be 1-100 characters of [A-Za-z0-9_.-], starting alphanumeric");
}

TEST(ForwardTest, JoinsAndNormalisesConditions) {
  EXPECT_EQ(
      validateConditions({"ip saddr", " 192.0.2.0/24 ", "ip daddr != { 10.0.0.1, 10.0.0.2 }"}),
      "ip saddr 192.0.2.0/24 ip daddr != { 10.0.0.1, 10.0.0.2 }");
  EXPECT_EQ(validateConditions({"ip", "saddr", "1.2.3.4"}), "ip saddr 1.2.3.4");
  EXPECT_EQ(validateConditions({}), "");
}

TEST(ForwardTest, RejectsConditionsThatCouldEndTheRule) {
  for (const auto* hostile : {"ip saddr 1.2.3.4; flush ruleset", "ip saddr 1.2.3.4\nflush ruleset",
                              "# comment", "meta mark \"x\"", "ip saddr `x`"}) {
    auto result = validateConditions({hostile});
    ASSERT_FALSE(result) << hostile;
    EXPECT_EQ(result.error().code, ErrorCode::kInvalidArgument);
  }
  EXPECT_FALSE(validateConditions({std::string(600, 'a')}));
}

TEST(ForwardTest, RejectsConditionsThatActInsteadOfMatch) {
  for (const auto* statement :
       {"ip saddr 192.0.2.0/24 meta mark set 0x2000", "ip saddr 1.2.3.4 drop", "jump postrouting",
        "ip saddr 0.0.0.0/0 dnat ip to 192.0.2.100", "ip saddr 1.2.3.4 counter",
        "ip saddr 1.2.3.4 ACCEPT", "ip saddr vmap { 1.2.3.4 : accept }"}) {
    auto result = validateConditions({statement});
    ASSERT_FALSE(result) << statement;
    EXPECT_NE(result.error().message.find("statement"), std::string::npos)
        << result.error().message;
  }
  for (const auto* unbalanced : {"ip saddr 192.0.2.0/24 }", "ip saddr { 1.2.3.4", "} {"}) {
    EXPECT_FALSE(validateConditions({unbalanced})) << unbalanced;
  }
  EXPECT_TRUE(validateConditions({"ip saddr != { 10.0.0.1, 10.0.0.2 } tcp flags syn"}));
}

TEST(ForwardTest, DescribesForwardsForMessages) {
  Forward v4{Protocol::kTcp, std::nullopt, 8080, *IpAddress::parse("10.88.0.5"), 80, ""};
  EXPECT_EQ(describe(v4), "tcp 0.0.0.0:8080 -> 10.88.0.5:80");
  Forward v6{
      Protocol::kUdp, *IpAddress::parse("2001:db8::1"), 53, *IpAddress::parse("fd00::5"), 5353, ""};
  EXPECT_EQ(describe(v6), "udp [2001:db8::1]:53 -> [fd00::5]:5353");
}

}  // namespace
}  // namespace hostport::nft
