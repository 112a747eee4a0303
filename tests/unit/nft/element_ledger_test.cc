// The ledger judges each element a dump shows against what the attachments expect: found as
// expected, missing, or unexpected (another target, another tag, nobody's), with masquerades
// shared by pods that share an address and owners the caller judges by other means left alone.

#include "nft/element_ledger.h"

#include <gtest/gtest.h>

namespace hostport::nft {
namespace {

IpAddress ip(const std::string& text) { return *IpAddress::parse(text); }

Forward tcp(uint16_t hostPort, const std::string& pod, uint16_t containerPort = 80) {
  return Forward{Protocol::kTcp, std::nullopt, hostPort, ip(pod), containerPort, {}};
}

/// One pod at `pod` (10.88.0.0/16 when IPv4) forwarding tcp `hostPort` with snat.
AttachmentRules pod(const std::string& owner, const std::string& podIp, uint16_t hostPort) {
  AttachmentRules rules{
      owner, {tcp(hostPort, podIp)}, {{ip(podIp), MasqueradeScope::kPodSubnet}}, {}};
  rules.podSubnets.push_back(IpPrefix{ip(podIp), 16}.network());
  return rules;
}

/// Passes what `rules` installs to the ledger, as a dump of an intact table would.
void dumpOf(ElementLedger& ledger, const AttachmentRules& rules) {
  for (const Forward& forward : rules.forwards) ledger.forward(rules.owner, forward, std::nullopt);
  for (const Masquerade& masquerade : rules.masquerades) {
    ledger.masquerade(rules.owner, masquerade);
  }
}

const std::vector<IpPrefix> kSubnet = {*IpPrefix::parse("10.88.0.0/16")};

TEST(ElementLedgerTest, AnIntactTableLeavesNothingMissingAndNothingUnexpected) {
  ElementLedger ledger;
  const auto a = pod("a/eth0", "10.88.0.5", 8080);
  const auto b = pod("b/eth0", "10.88.0.6", 8081);
  ledger.expect(0, a);
  ledger.expect(7, b);
  dumpOf(ledger, b);
  dumpOf(ledger, a);
  ledger.podSubnet(kSubnet.front());
  EXPECT_TRUE(ledger.missing(kSubnet).empty());
  EXPECT_TRUE(ledger.takeUnexpected().empty());
  EXPECT_EQ(ledger.takePodSubnets(), kSubnet);
  EXPECT_EQ(ledger.attachmentOf("b/eth0"), 7u);
  EXPECT_EQ(ledger.attachmentOf("c/eth0"), std::nullopt);
}

TEST(ElementLedgerTest, WhatTheDumpLacksIsMissingFromItsAttachmentWithTheFirstPieceNamed) {
  ElementLedger ledger;
  ledger.expect(3, pod("a/eth0", "10.88.0.5", 8080));
  ledger.masquerade("a/eth0", {ip("10.88.0.5"), MasqueradeScope::kPodSubnet});
  const auto missing = ledger.missing(kSubnet);
  ASSERT_EQ(missing.size(), 1u);
  EXPECT_EQ(missing[0].attachment, 3u);
  EXPECT_EQ(missing[0].count, 1u);
  EXPECT_EQ(missing[0].first, "forward tcp 0.0.0.0:8080 -> 10.88.0.5:80");

  // With no pod subnet overlapping its own, that is missing too.
  const auto withoutSubnet = ledger.missing({*IpPrefix::parse("10.99.0.0/16")});
  ASSERT_EQ(withoutSubnet.size(), 1u);
  EXPECT_EQ(withoutSubnet[0].count, 2u);
}

TEST(ElementLedgerTest, AnotherTargetOrAnotherTagAtAnExpectedKeyIsUnexpectedAndLeavesItMissing) {
  ElementLedger ledger;
  ledger.expect(0, pod("a/eth0", "10.88.0.5", 8080));
  ledger.expect(1, pod("b/eth0", "10.88.0.6", 8081));
  ledger.forward("a/eth0", tcp(8080, "10.88.0.9"), std::nullopt);   // its key, another pod
  ledger.forward("zz/eth0", tcp(8081, "10.88.0.6"), std::nullopt);  // b's element, another tag
  ledger.masquerade("a/eth0", {ip("10.88.0.5"), MasqueradeScope::kPodSubnet});
  ledger.masquerade("b/eth0", {ip("10.88.0.6"), MasqueradeScope::kPodSubnet});
  ledger.forward("c/eth0", tcp(9999, "10.88.0.7"), std::nullopt);  // nobody expects it

  const auto missing = ledger.missing(kSubnet);
  ASSERT_EQ(missing.size(), 2u);
  EXPECT_EQ(missing[0].attachment, 0u);
  EXPECT_EQ(missing[1].attachment, 1u);
  auto unexpected = ledger.takeUnexpected();
  ASSERT_EQ(unexpected.size(), 3u);
  EXPECT_EQ(unexpected.at("a/eth0").forwards, std::vector<Forward>{tcp(8080, "10.88.0.9")});
  EXPECT_EQ(unexpected.at("zz/eth0").forwards, std::vector<Forward>{tcp(8081, "10.88.0.6")});
  EXPECT_EQ(unexpected.at("c/eth0").forwards, std::vector<Forward>{tcp(9999, "10.88.0.7")});
}

TEST(ElementLedgerTest, PodsSharingAnAddressShareItsMasqueradeUnderEitherTag) {
  ElementLedger ledger;
  ledger.expect(0, pod("old/eth0", "10.88.0.5", 8080));
  ledger.expect(1, pod("new/eth0", "10.88.0.5", 8081));
  ledger.forward("old/eth0", tcp(8080, "10.88.0.5"), std::nullopt);
  ledger.forward("new/eth0", tcp(8081, "10.88.0.5"), std::nullopt);
  ledger.masquerade("old/eth0", {ip("10.88.0.5"), MasqueradeScope::kPodSubnet});
  EXPECT_TRUE(ledger.missing(kSubnet).empty());
  EXPECT_TRUE(ledger.takeUnexpected().empty());

  // Under a tag neither has, it serves neither.
  ElementLedger other;
  other.expect(0, pod("old/eth0", "10.88.0.5", 8080));
  other.expect(1, pod("new/eth0", "10.88.0.5", 8081));
  other.masquerade("gone/eth0", {ip("10.88.0.5"), MasqueradeScope::kPodSubnet});
  EXPECT_EQ(other.missing(kSubnet).size(), 2u);
  EXPECT_EQ(other.takeUnexpected().at("gone/eth0").masquerades.size(), 1u);
}

TEST(ElementLedgerTest, AScopeOrFamilyIsPartOfTheKey) {
  ElementLedger ledger;
  AttachmentRules v6{
      "a/eth0", {tcp(8080, "fd00::5")}, {{ip("fd00::5"), MasqueradeScope::kEverySource}}, {}};
  ledger.expect(0, v6);
  ledger.forward("a/eth0", tcp(8080, "10.88.0.5"), std::nullopt);  // IPv4, same port
  ledger.masquerade("a/eth0", {ip("fd00::5"), MasqueradeScope::kPodSubnet});
  EXPECT_EQ(ledger.missing({}).at(0).count, 2u);
  EXPECT_EQ(ledger.takeUnexpected().at("a/eth0").forwards.size(), 1u);

  // A forward to a named host address is another key than the same port on every address.
  ElementLedger byHost;
  Forward named = tcp(8080, "10.88.0.5");
  named.hostIp = ip("192.0.2.1");
  byHost.expect(0, AttachmentRules{"a/eth0", {named}, {}, {}});
  byHost.forward("a/eth0", tcp(8080, "10.88.0.5"), std::nullopt);
  const auto missing = byHost.missing({});
  ASSERT_EQ(missing.size(), 1u);
  EXPECT_EQ(missing[0].first, "forward tcp 192.0.2.1:8080 -> 10.88.0.5:80");
  byHost.forward("a/eth0", named, std::nullopt);
  EXPECT_TRUE(byHost.missing({}).empty());
}

TEST(ElementLedgerTest, ATolerantOwnerIsNeverUnexpectedAndRulesAreNeverExpected) {
  ElementLedger ledger;
  ledger.expect(0, pod("a/eth0", "10.88.0.5", 8080));
  ledger.tolerate("cond/eth0");
  ledger.forward("cond/eth0", tcp(8080, "10.88.0.9"), std::nullopt);
  ledger.forward("cond/eth0", unidentifiedRule(Family::kIPv4), 12);
  // A rule of the conditional chain is never an expected forward, even one at an expected key.
  ledger.forward("a/eth0", tcp(8080, "10.88.0.5"), 13);
  ledger.forward("a/eth0", unidentifiedRule(Family::kIPv4), 14);
  auto unexpected = ledger.takeUnexpected();
  ASSERT_EQ(unexpected.size(), 1u);
  EXPECT_EQ(unexpected.at("a/eth0").forwards.size(), 2u);
  EXPECT_TRUE(unexpected.at("a/eth0").hasConditions());
  EXPECT_EQ(ledger.missing(kSubnet).at(0).attachment, 0u);
}

TEST(ElementLedgerTest, ThousandsOfAttachmentsAreFoundWhateverOrderTheDumpComesIn) {
  ElementLedger ledger;
  std::vector<AttachmentRules> pods;
  for (uint32_t i = 0; i < 5000; ++i) {
    const std::string address =
        "10.88." + std::to_string(i / 250) + "." + std::to_string(i % 250 + 1);
    pods.push_back(pod("c" + std::to_string(i) + "/eth0", address, static_cast<uint16_t>(i + 1)));
    ledger.expect(i, pods.back());
  }
  for (std::size_t i = pods.size(); i-- > 0;) {
    if (i % 1000 != 0) dumpOf(ledger, pods[i]);
  }
  const auto missing = ledger.missing(kSubnet);
  ASSERT_EQ(missing.size(), 5u);
  for (std::size_t i = 0; i < missing.size(); ++i) {
    EXPECT_EQ(missing[i].attachment, i * 1000);
    EXPECT_EQ(missing[i].count, 2u);
  }
  EXPECT_TRUE(ledger.takeUnexpected().empty());
  // A caller that kept nothing of its attachments learns whose each is.
  EXPECT_EQ(ledger.ownerOf(missing[3].attachment), "c3000/eth0");
  EXPECT_EQ(ledger.ownerOf(4999), "c4999/eth0");
  EXPECT_EQ(ledger.ownerOf(5000), "") << "never expected";
}

}  // namespace
}  // namespace hostport::nft
