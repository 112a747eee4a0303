// Golden tests: the exact nft text each attachment produces.

#include "nft/commands.h"

#include <gtest/gtest.h>

#include "nft/table_layout.h"

namespace hostport::nft {
namespace {

IpAddress ip(const char* text) { return *IpAddress::parse(text); }
IpPrefix prefix(const char* text) { return *IpPrefix::parse(text); }

AttachmentRules sampleRules() {
  AttachmentRules rules{"c0ffee/eth0", {}, {}};
  rules.forwards.push_back({Protocol::kTcp, std::nullopt, 8080, ip("10.88.0.5"), 80, ""});
  rules.forwards.push_back({Protocol::kUdp, ip("192.0.2.1"), 5353, ip("10.88.0.5"), 53, ""});
  rules.forwards.push_back({Protocol::kSctp, std::nullopt, 9000, ip("fd00::5"), 9, ""});
  rules.masquerades.push_back({ip("10.88.0.5"), MasqueradeScope::kPodSubnet});
  rules.masquerades.push_back({ip("fd00::5"), MasqueradeScope::kEverySource});
  rules.podSubnets.push_back(prefix("10.88.0.0/16"));
  return rules;
}

TEST(CommandsTest, InstallsMapElementsTaggedWithTheOwner) {
  EXPECT_EQ(
      installCommands(sampleRules()),
      "add element ip hostport ports { tcp . 8080 comment \"c0ffee/eth0\" : 10.88.0.5 . 80 }\n"
      "add element ip hostport ipports { 192.0.2.1 . udp . 5353 comment \"c0ffee/eth0\" : "
      "10.88.0.5 . 53 }\n"
      "add element ip6 hostport ports { sctp . 9000 comment \"c0ffee/eth0\" : fd00::5 . 9 }\n"
      "add element ip hostport snatpods { 10.88.0.5 comment \"c0ffee/eth0\" }\n"
      "add element ip6 hostport masqall { fd00::5 comment \"c0ffee/eth0\" }\n"
      "add element ip hostport podnets { 10.88.0.0/16 . 10.88.0.0/16 }\n");
}

// Our own part comes last, the host IP match after the port match: a listing reads it back from
// the rule's end without interpreting the user's matches (table_state.cc).
TEST(CommandsTest, PutsForwardsWithConditionsIntoTheConditionalChainWithOurPartLast) {
  AttachmentRules rules{"c1/eth0", {}, {}};
  rules.forwards.push_back(
      {Protocol::kTcp, ip("192.0.2.1"), 8080, ip("10.88.0.5"), 80, "ip saddr != 203.0.113.0/24"});
  rules.forwards.push_back(
      {Protocol::kUdp, std::nullopt, 53, ip("fd00::5"), 5353, "ip6 saddr ::1"});
  EXPECT_EQ(installCommands(rules),
            "add rule ip hostport conditional ip saddr != 203.0.113.0/24 meta l4proto tcp "
            "th dport 8080 ip daddr 192.0.2.1 dnat ip to 10.88.0.5:80 comment \"c1/eth0\"\n"
            "add rule ip6 hostport conditional ip6 saddr ::1 meta l4proto udp th dport 53 "
            "dnat ip6 to [fd00::5]:5353 comment \"c1/eth0\"\n");
}

TEST(CommandsTest, RemovesElementsByKeyAndRulesByHandle) {
  TableState owned;
  owned.forwards.push_back(
      {"o/eth0", {Protocol::kTcp, std::nullopt, 8080, ip("10.88.0.5"), 80, ""}, std::nullopt});
  owned.forwards.push_back(
      {"o/eth0", {Protocol::kUdp, ip("2001:db8::1"), 53, ip("fd00::5"), 53, ""}, std::nullopt});
  owned.forwards.push_back(
      {"o/eth0", {Protocol::kTcp, std::nullopt, 81, ip("10.88.0.5"), 80, "(conditions)"}, 42});
  owned.masquerades.push_back({"o/eth0", {ip("fd00::5"), MasqueradeScope::kEverySource}});
  owned.masquerades.push_back({"o/eth0", {ip("10.88.0.5"), MasqueradeScope::kPodSubnet}});
  owned.podSubnets.push_back(prefix("10.88.0.0/16"));  // shared: never removed with an owner
  EXPECT_EQ(removeCommands(owned),
            "delete element ip hostport ports { tcp . 8080 }\n"
            "delete element ip6 hostport ipports { 2001:db8::1 . udp . 53 }\n"
            "delete rule ip hostport conditional handle 42\n"
            "delete element ip6 hostport masqall { fd00::5 }\n"
            "delete element ip hostport snatpods { 10.88.0.5 }\n");
}

TEST(CommandsTest, EmptyRulesProduceNoCommands) {
  EXPECT_EQ(installCommands(AttachmentRules{"o/eth0", {}, {}}), "");
  EXPECT_EQ(removeCommands(TableState{}), "");
}

}  // namespace
}  // namespace hostport::nft
