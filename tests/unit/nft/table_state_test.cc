// Parsing of libnftables' JSON listing, using output captured from nft 1.0.6 on this kernel, and
// the comparison of what is installed with what was planned.

#include "nft/table_state.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "nft/table_layout.h"

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
            {"match": {"op": "==", "left": {"payload": {"protocol": "tcp", "field": "dport"}}, "right": 8080}},
            {"match": {"op": "==", "left": {"payload": {"protocol": "ip", "field": "daddr"}}, "right": "192.0.2.1"}},
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
  // Our daddr match comes after our port match, at the end: the user's daddr before is theirs.
  EXPECT_EQ(describe(rule.forward), "tcp 192.0.2.1:8080 -> 10.88.0.5:80");
  EXPECT_EQ(rule.forward.conditions, kInstalledConditionsMarker);
}

// What nft 1.0.6 lists for rules that commands.cc writes, `<conditions> meta l4proto P th dport N
// [ip daddr H] dnat ip to C:CP`, with user conditions of every shape before our part: ranges and
// sets on the right of a match (which a reader of the whole rule could not take for a port), the
// user's own `ip daddr` (which it would take for the host IP), prefixes, marks, negations. Each
// expression list is the `expr` of one rule as `nft -j -a list ruleset` printed it.
struct ConditionShape {
  std::string name;
  std::string family;
  std::string expressions;
  std::optional<std::string> forward;  // describe() of what reads back; none: unidentified
};

std::string match(const std::string& op, const std::string& left, const std::string& right) {
  return R"({"match": {"op": ")" + op + R"(", "left": )" + left + R"(, "right": )" + right + "}}";
}
std::string payload(const std::string& protocol, const std::string& field) {
  return R"({"payload": {"protocol": ")" + protocol + R"(", "field": ")" + field + R"("}})";
}
std::string expressions(std::initializer_list<std::string> items) {
  std::string out;
  for (const auto& item : items) out += (out.empty() ? "" : ", ") + item;
  return "[" + out + "]";
}

std::vector<ConditionShape> conditionShapes() {
  const std::string ourPort = match("==", payload("tcp", "dport"), "9101");
  const std::string ourHostIp = match("==", payload("ip", "daddr"), R"("192.0.2.2")");
  const std::string dnat = R"({"dnat": {"addr": "10.88.0.5", "port": 80}})";
  const std::string range = match("==", payload("tcp", "dport"), R"({"range": [1, 65535]})");
  const std::string set = match("==", payload("tcp", "dport"), R"({"set": [1, 2]})");
  const std::string userDaddr = match("==", payload("ip", "daddr"), R"("192.0.2.1")");
  const std::string saddrPrefix =
      match("==", payload("ip", "saddr"), R"({"prefix": {"addr": "192.0.2.0", "len": 24}})");
  const std::string mark = match("==", R"({"meta": {"key": "mark"}})", "1");
  const std::string notPrefix =
      match("!=", payload("ip", "saddr"), R"({"prefix": {"addr": "10.0.0.0", "len": 8}})");
  const std::string notPort = match("!=", payload("tcp", "dport"), "9101");
  const std::string any = "tcp 0.0.0.0:9101 -> 10.88.0.5:80";
  const std::string one = "tcp 192.0.2.2:9101 -> 10.88.0.5:80";
  return {
      {"Range", "ip", expressions({range, ourPort, dnat}), any},
      {"RangeWithHostIp", "ip", expressions({range, ourPort, ourHostIp, dnat}), one},
      {"Set", "ip", expressions({set, ourPort, dnat}), any},
      {"UserDaddr", "ip", expressions({userDaddr, ourPort, dnat}), any},
      {"UserDaddrWithHostIp", "ip", expressions({userDaddr, ourPort, ourHostIp, dnat}), one},
      {"SaddrPrefix", "ip", expressions({saddrPrefix, ourPort, dnat}), any},
      {"Mark", "ip", expressions({mark, ourPort, dnat}), any},
      {"NegatedPrefix", "ip", expressions({notPrefix, ourPort, dnat}), any},
      {"NegatedPortBeforeOurs", "ip",
       expressions({notPort, match("==", payload("udp", "dport"), "9101"), ourHostIp, dnat}),
       "udp 192.0.2.2:9101 -> 10.88.0.5:80"},
      {"Ip6WithBothDaddrs", "ip6",
       expressions({match("==", payload("ip6", "daddr"), R"("2001:db8::1")"),
                    match("==", payload("udp", "dport"), "53"),
                    match("==", payload("ip6", "daddr"), R"("2001:db8::2")"),
                    R"({"dnat": {"addr": "fd00::5", "port": 5353}})"}),
       "udp [2001:db8::2]:53 -> [fd00::5]:5353"},
      {"Ip6SctpNegated", "ip6",
       expressions(
           {match("!=", payload("ip6", "saddr"), R"({"prefix": {"addr": "fd00::", "len": 64}})"),
            match("==", payload("sctp", "dport"), "9"),
            R"({"dnat": {"addr": "fd00::5", "port": 9}})"}),
       "sctp [::]:9 -> [fd00::5]:9"},
      // The first layout wrote the host IP before the port: such a rule reads as one without.
      {"FirstLayoutHostIp", "ip", expressions({ourHostIp, ourPort, dnat}), any},
      // Not ours: someone's rule under an owner tag (a verdict, a range where our port goes, no
      // port in the dnat, a statement between our matches and the dnat, another family's).
      {"Verdict", "ip", expressions({saddrPrefix, R"({"accept": null})"}), std::nullopt},
      {"RangeAsOurPort", "ip", expressions({range, dnat}), std::nullopt},
      {"DnatWithoutPort", "ip", expressions({ourPort, R"({"dnat": {"addr": "10.88.0.5"}})"}),
       std::nullopt},
      {"CounterBeforeTheDnat", "ip",
       expressions({ourPort, R"({"counter": {"packets": 0, "bytes": 0}})", dnat}), std::nullopt},
      {"DnatAlone", "ip", expressions({dnat}), std::nullopt},
      {"DnatToTheOtherFamily", "ip6", expressions({ourPort, dnat}), std::nullopt},
      {"HostIpOfTheOtherFamily", "ip",
       expressions({ourPort, match("==", payload("ip6", "daddr"), R"("2001:db8::2")"), dnat}),
       std::nullopt},
  };
}

void PrintTo(const ConditionShape& shape, std::ostream* os) { *os << shape.name; }

class ConditionalRuleShapeTest : public ::testing::TestWithParam<ConditionShape> {};

TEST_P(ConditionalRuleShapeTest, ReadsOnlyOurOwnPartAndKeepsEveryRuleWithItsOwnerAndHandle) {
  const ConditionShape& shape = GetParam();
  const json rule = {{"family", shape.family}, {"table", "hostport"},
                     {"chain", "conditional"}, {"handle", 21u},
                     {"comment", "abc/eth0"},  {"expr", json::parse(shape.expressions)}};
  json entry = json::object();
  entry["rule"] = rule;
  json listing = json::object();
  listing["nftables"] = json::array({entry});
  TableState state;
  const auto parsed = parseTableListing(listing, state);
  ASSERT_TRUE(parsed) << parsed.error().message
                      << "\none rule must never fail the listing (and with it every owner's DEL)";

  ASSERT_EQ(state.forwards.size(), 1u);
  const InstalledForward& read = state.forwards[0];
  EXPECT_EQ(read.owner, "abc/eth0");
  EXPECT_EQ(read.ruleHandle, 21u);
  EXPECT_EQ(nftFamily(read.forward.family()), shape.family) << "deleted by handle in its family";
  if (!shape.forward) {
    EXPECT_TRUE(isUnidentifiedRule(read.forward)) << describe(read.forward);
    const Forward planned{
        Protocol::kTcp,     std::nullopt, 9101, *IpAddress::parse("10.88.0.5"), 80,
        "tcp dport 1-65535"};
    EXPECT_FALSE(matchesInstalled(planned, read.forward));
    return;
  }
  EXPECT_EQ(describe(read.forward), *shape.forward);
  EXPECT_EQ(read.forward.conditions, kInstalledConditionsMarker);
}

INSTANTIATE_TEST_SUITE_P(Shapes, ConditionalRuleShapeTest, ::testing::ValuesIn(conditionShapes()),
                         [](const auto& info) { return info.param.name; });

TEST(TableStateTest, AnUnidentifiedRuleSaysSoWhenDescribed) {
  EXPECT_EQ(describe(unidentifiedRule(Family::kIPv6)),
            "an unidentified ip6 rule in chain conditional");
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
