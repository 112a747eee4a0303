// Parsing of libnftables' JSON listing, using output captured from nft 1.0.6 on this kernel, and
// the comparison of what is installed with what was planned.

#include "nft/table_state.h"

#include <gtest/gtest.h>

#include <algorithm>

namespace hostport::nft {
namespace {

using nlohmann::json;

const char* kListing = R"({"nftables": [
 {"metainfo": {"version": "1.0.6", "json_schema_version": 1}},
 {"table": {"family": "ip", "name": "hostport", "handle": 3}},
 {"map": {"family": "ip", "name": "ports", "table": "hostport", "type": ["inet_proto", "inet_service"],
   "handle": 5, "map": "ipv4_addr . inet_service", "elem": [
   [{"elem": {"val": {"concat": ["tcp", 8080]}, "comment": "abc/eth0 \"q;\""}}, {"concat": ["10.88.0.5", 80]}],
   [{"concat": ["udp", 53]}, {"concat": ["10.88.0.6", 5353]}]]}},
 {"map": {"family": "ip", "name": "ipports", "table": "hostport", "elem": [
   [{"elem": {"val": {"concat": ["192.0.2.1", "sctp", 9]}, "comment": "x/eth1"}}, {"concat": ["10.88.0.7", 9]}]]}},
 {"set": {"family": "ip", "name": "snatpods", "table": "hostport", "type": "ipv4_addr", "handle": 1, "elem": [
   {"elem": {"val": "10.88.0.5", "comment": "abc/eth0"}},
   "10.88.0.9"]}},
 {"set": {"family": "ip", "name": "masqall", "table": "hostport", "type": "ipv4_addr", "handle": 2, "elem": [
   {"elem": {"val": "10.88.0.7", "comment": "x/eth1"}}]}},
 {"set": {"family": "ip", "name": "podnets", "table": "hostport", "type": ["ipv4_addr", "ipv4_addr"], "handle": 3, "flags": ["interval"], "elem": [
   {"concat": [{"prefix": {"addr": "10.88.0.0", "len": 16}}, {"prefix": {"addr": "10.88.0.0", "len": 16}}]},
   {"concat": ["10.89.0.1", "10.89.0.1"]}]}},
 {"chain": {"family": "ip", "table": "hostport", "name": "conditional", "handle": 13}},
 {"rule": {"family": "ip", "table": "hostport", "chain": "conditional", "handle": 14, "comment": "c/eth0",
   "expr": [{"match": {"op": "==", "left": {"payload": {"protocol": "ip", "field": "daddr"}}, "right": "203.0.113.9"}},
            {"match": {"op": "==", "left": {"payload": {"protocol": "ip", "field": "saddr"}}, "right": {"prefix": {"addr": "192.0.2.0", "len": 24}}}},
            {"match": {"op": "==", "left": {"payload": {"protocol": "ip", "field": "daddr"}}, "right": "192.0.2.1"}},
            {"match": {"op": "==", "left": {"payload": {"protocol": "tcp", "field": "dport"}}, "right": 8080}},
            {"dnat": {"addr": "10.88.0.5", "port": 80}}]}},
 {"rule": {"family": "ip", "table": "hostport", "chain": "hostports", "handle": 15,
   "expr": [{"jump": {"target": "conditional"}}]}}
]})";

TableState parse(const char* text) {
  TableState state;
  auto parsed = parseTableListing(json::parse(text), state);
  EXPECT_TRUE(parsed) << (parsed ? "" : parsed.error().message);
  return state;
}

TEST(TableStateTest, ReadsOwnersFromCommentsVerbatim) {
  const TableState state = parse(kListing);
  ASSERT_EQ(state.forwards.size(), 4u);
  EXPECT_EQ(state.forwards[0].owner, "abc/eth0 \"q;\"");
  EXPECT_EQ(describe(state.forwards[0].forward), "tcp 0.0.0.0:8080 -> 10.88.0.5:80");
  EXPECT_EQ(state.forwards[1].owner, "");  // an element someone added by hand
  EXPECT_EQ(describe(state.forwards[2].forward), "sctp 192.0.2.1:9 -> 10.88.0.7:9");
}

TEST(TableStateTest, ReadsBackConditionalRulesWithTheirHandle) {
  const TableState state = parse(kListing);
  const auto& rule = state.forwards[3];
  EXPECT_EQ(rule.owner, "c/eth0");
  EXPECT_EQ(rule.ruleHandle, 14u);
  // Our daddr match comes last, after the user's conditions.
  EXPECT_EQ(describe(rule.forward), "tcp 192.0.2.1:8080 -> 10.88.0.5:80");
  EXPECT_EQ(rule.forward.conditions, kInstalledConditionsMarker);
}

TEST(TableStateTest, ReadsMasqueradesBySetAndPodSubnetsAsPrefixes) {
  const TableState state = parse(kListing);
  ASSERT_EQ(state.masquerades.size(), 3u);
  EXPECT_EQ(state.masquerades[0].owner, "abc/eth0");
  EXPECT_EQ(describe(state.masquerades[0].masquerade), "10.88.0.5 (pod subnet)");
  EXPECT_EQ(state.masquerades[1].owner, "");
  EXPECT_EQ(describe(state.masquerades[2].masquerade), "10.88.0.7 (every source)");
  // A single host is listed as a bare address.
  EXPECT_EQ(state.podSubnets,
            (std::vector{*IpPrefix::parse("10.88.0.0/16"), *IpPrefix::parse("10.89.0.1/32")}));
}

TEST(TableStateTest, RefusesAPodSubnetElementWhoseHalvesDiffer) {
  TableState state;
  EXPECT_FALSE(parseTableListing(json::parse(R"({"nftables": [{"set": {"name": "podnets",
    "elem": [{"concat": ["10.0.0.1", "10.0.0.2"]}]}}]})"),
                                 state));
}

TEST(TableStateTest, SelectsWhatOneOwnerHolds) {
  const TableState state = parse(kListing);
  const AttachmentRules rules = state.rulesOf("x/eth1");
  ASSERT_EQ(rules.forwards.size(), 1u);
  EXPECT_EQ(rules.forwards[0].hostPort, 9);
  ASSERT_EQ(rules.masquerades.size(), 1u);
  EXPECT_TRUE(rules.podSubnets.empty()) << "the pod subnets are nobody's";
  EXPECT_EQ(state.ownedBy("x/eth1").podSubnets.size(), 2u) << "but every owner reads them";
  EXPECT_TRUE(state.ownedBy("nobody/eth0").empty());
  EXPECT_EQ(state.ownedBy("c/eth0").forwards.size(), 1u);
}

TEST(TableStateTest, RejectsListingsItDoesNotUnderstand) {
  TableState state;
  EXPECT_FALSE(parseTableListing(json::parse(R"({"x": 1})"), state));
  EXPECT_FALSE(parseTableListing(
      json::parse(R"({"nftables": [{"map": {"name": "ports", "elem": [[{"concat": ["tcp"]},
        {"concat": ["10.0.0.1", 80]}]]}}]})"),
      state));
  EXPECT_FALSE(parseTableListing(
      json::parse(R"({"nftables": [{"map": {"name": "ports", "elem": [[{"concat": ["tcp", 70000]},
        {"concat": ["10.0.0.1", 80]}]]}}]})"),
      state));
}

TEST(TableStateTest, ComparesConditionsByPresenceOnly) {
  Forward expected{Protocol::kTcp, std::nullopt,      80, *IpAddress::parse("10.0.0.1"),
                   8080,           "ip saddr 1.2.3.4"};
  Forward installed = expected;
  installed.conditions = std::string(kInstalledConditionsMarker);
  EXPECT_TRUE(matchesInstalled(expected, installed));
  installed.conditions.clear();
  EXPECT_FALSE(matchesInstalled(expected, installed));
  installed = expected;
  installed.containerPort = 8081;
  EXPECT_FALSE(matchesInstalled(expected, installed));
}

Forward tcpForward(uint16_t hostPort, const char* podIp, uint16_t podPort) {
  return {Protocol::kTcp, std::nullopt, hostPort, *IpAddress::parse(podIp), podPort, ""};
}

Masquerade masquerade(const char* podIp, MasqueradeScope scope = MasqueradeScope::kPodSubnet) {
  return {*IpAddress::parse(podIp), scope};
}

AttachmentRules plannedRules() {
  AttachmentRules rules{"a/eth0", {}, {}};
  rules.forwards = {tcpForward(8080, "10.88.0.5", 80), tcpForward(8443, "fd00::5", 443)};
  rules.masquerades = {masquerade("10.88.0.5"), masquerade("fd00::5")};
  rules.podSubnets = {*IpPrefix::parse("10.88.0.0/16"), *IpPrefix::parse("fd00::/64")};
  return rules;
}

TEST(RulesDiffTest, IsEmptyWhenTheTableHoldsThePlanInAnyOrder) {
  const AttachmentRules planned = plannedRules();
  AttachmentRules installed = planned;
  std::ranges::reverse(installed.forwards);
  std::ranges::reverse(installed.masquerades);

  const RulesDiff found = diff(planned, installed);

  EXPECT_TRUE(found.empty());
}

TEST(RulesDiffTest, ListsPlannedForwardsTheTableLacksInPlannedOrder) {
  AttachmentRules planned = plannedRules();
  planned.forwards.push_back(tcpForward(9000, "10.88.0.5", 90));
  AttachmentRules installed = planned;
  installed.forwards = {planned.forwards[1]};

  const RulesDiff found = diff(planned, installed);

  EXPECT_EQ(found.missingForwards, (std::vector{planned.forwards[0], planned.forwards[2]}));
  EXPECT_TRUE(found.unexpectedForwards.empty());
  EXPECT_TRUE(found.missingMasquerades.empty());
  EXPECT_TRUE(found.unexpectedMasquerades.empty());
  EXPECT_FALSE(found.empty());
}

TEST(RulesDiffTest, ListsInstalledForwardsNobodyPlannedInTableOrder) {
  const AttachmentRules planned = plannedRules();
  AttachmentRules installed = planned;
  const Forward elsewhere = tcpForward(8080, "10.88.0.5", 81);  // same key, other target
  const Forward extra = tcpForward(9999, "10.88.0.5", 80);
  installed.forwards = {extra, planned.forwards[1], elsewhere, planned.forwards[0]};

  const RulesDiff found = diff(planned, installed);

  EXPECT_TRUE(found.missingForwards.empty());
  EXPECT_EQ(found.unexpectedForwards, (std::vector{extra, elsewhere}));
  EXPECT_FALSE(found.empty());
}

TEST(RulesDiffTest, ListsMissingAndUnexpectedMasqueradesExactly) {
  const AttachmentRules planned = plannedRules();
  AttachmentRules installed = planned;
  const Masquerade wider = masquerade("10.88.0.5", MasqueradeScope::kEverySource);
  installed.masquerades = {wider, planned.masquerades[1]};

  const RulesDiff found = diff(planned, installed);

  EXPECT_TRUE(found.missingForwards.empty());
  EXPECT_TRUE(found.unexpectedForwards.empty());
  EXPECT_EQ(found.missingMasquerades, std::vector{planned.masquerades[0]});
  EXPECT_EQ(found.unexpectedMasquerades, std::vector{wider});
  EXPECT_EQ(found.describeFirstMissing(), "masquerade 10.88.0.5 (pod subnet)");
}

TEST(RulesDiffTest, APodSubnetIsThereWhenAnInstalledOneOverlapsIt) {
  const AttachmentRules planned = plannedRules();
  AttachmentRules installed = planned;
  // Another network's wider subnet: the kernel refuses ours nested in it, and it serves us.
  installed.podSubnets = {*IpPrefix::parse("10.0.0.0/8"), *IpPrefix::parse("fd01::/64")};

  const RulesDiff found = diff(planned, installed);

  EXPECT_EQ(found.missingPodSubnets, std::vector{planned.podSubnets[1]});
  EXPECT_EQ(found.missing(), 1u);
  EXPECT_EQ(found.describeFirstMissing(), "pod subnet fd00::/64");
  installed.podSubnets.clear();
  EXPECT_EQ(diff(planned, installed).missingPodSubnets, planned.podSubnets);
}

TEST(RulesDiffTest, MatchesAConditionalRuleReadBackWithoutItsConditionText) {
  AttachmentRules planned = plannedRules();
  planned.forwards[0].conditions = "ip saddr 192.0.2.0/24";
  AttachmentRules installed = planned;
  installed.forwards[0].conditions = std::string(kInstalledConditionsMarker);
  EXPECT_TRUE(diff(planned, installed).empty());

  installed.forwards[0].conditions.clear();  // the same forward, but in the maps
  const RulesDiff found = diff(planned, installed);

  EXPECT_EQ(found.missingForwards, std::vector{planned.forwards[0]});
  EXPECT_EQ(found.unexpectedForwards, std::vector{installed.forwards[0]});
}

TEST(RulesDiffTest, ComparesMembershipSoOneInstalledCopyStandsForRepeats) {
  AttachmentRules planned = plannedRules();
  planned.forwards.push_back(planned.forwards[0]);
  planned.masquerades.push_back(planned.masquerades[0]);

  EXPECT_TRUE(diff(planned, plannedRules()).empty());
  EXPECT_TRUE(diff(plannedRules(), planned).empty());
}

TEST(RulesDiffTest, IgnoresTheOwnersOfBothSides) {
  AttachmentRules installed = plannedRules();
  installed.owner = "someone/else";

  EXPECT_TRUE(diff(plannedRules(), installed).empty());
}

TEST(RulesDiffTest, ListsEverythingWhenOneSideIsEmpty) {
  const AttachmentRules planned = plannedRules();
  const AttachmentRules nothing{"a/eth0", {}, {}};

  const RulesDiff missing = diff(planned, nothing);
  EXPECT_EQ(missing.missingForwards, planned.forwards);
  EXPECT_EQ(missing.missingMasquerades, planned.masquerades);
  EXPECT_EQ(missing.missingPodSubnets, planned.podSubnets);
  EXPECT_TRUE(missing.unexpectedForwards.empty());
  EXPECT_TRUE(missing.unexpectedMasquerades.empty());

  const RulesDiff unexpected = diff(nothing, planned);
  EXPECT_EQ(unexpected.unexpectedForwards, planned.forwards);
  EXPECT_EQ(unexpected.unexpectedMasquerades, planned.masquerades);
  EXPECT_TRUE(unexpected.missingForwards.empty());
  EXPECT_TRUE(unexpected.missingMasquerades.empty());
  EXPECT_TRUE(diff(nothing, nothing).empty());
}

}  // namespace
}  // namespace hostport::nft
