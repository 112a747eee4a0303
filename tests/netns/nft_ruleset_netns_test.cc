// NftRuleset against the real kernel. Each test runs on a thread that unshares its own network
// namespace (test::inPrivateNetns), so it sees an empty ruleset, cannot touch the host's, and
// leaves nothing behind: the namespace dies with the thread.

#include <gtest/gtest.h>

#include <algorithm>
#include <string>
#include <system_error>
#include <utility>
#include <vector>

#include "nft/kernel/layout_guard.h"
#include "nft/kernel/nft_context.h"
#include "nft/kernel/nft_ruleset.h"
#include "tests/support/netns.h"
#include "tests/support/result_assertions.h"

namespace hostport::nft::kernel {
namespace {

IpAddress ip(const char* text) { return *IpAddress::parse(text); }
IpPrefix prefix(const char* text) { return *IpPrefix::parse(text); }

class NftRulesetTest : public ::testing::Test {
 protected:
  void SetUp() override { HOSTPORT_SKIP_UNLESS_ROOT(); }

  static std::unique_ptr<NftRuleset> ruleset() {
    auto created = NftRuleset::create();
    EXPECT_TRUE(created);
    return std::move(*created);
  }

  static std::string listTables() {
    auto context = NftContext::create();
    auto text = context->run("list ruleset");
    return text ? *text : "error: " + text.error().message;
  }

  static AttachmentRules podRules(const std::string& owner, uint16_t hostPort, const char* podIp) {
    AttachmentRules rules{owner, {}, {}};
    rules.forwards.push_back({Protocol::kTcp, std::nullopt, hostPort, ip(podIp), 80, ""});
    rules.forwards.push_back({Protocol::kUdp, ip("192.0.2.1"), hostPort, ip(podIp), 53, ""});
    rules.forwards.push_back({Protocol::kTcp, std::nullopt, hostPort, ip("fd00::5"), 80, ""});
    rules.masquerades.push_back({ip(podIp), MasqueradeScope::kPodSubnet});
    rules.podSubnets.push_back(prefix("10.88.0.0/16"));
    return rules;
  }
};

TEST_F(NftRulesetTest, EnsureTablesIsIdempotentAndKeepsElements) {
  ASSERT_OK(test::inPrivateNetns([] {
    auto tables = ruleset();
    ASSERT_TRUE(tables->ensureTables());
    const std::string empty = listTables();
    EXPECT_NE(empty.find("table ip hostport"), std::string::npos);
    EXPECT_NE(empty.find("table ip6 hostport"), std::string::npos);
    ASSERT_TRUE(tables->ensureTables());
    EXPECT_EQ(listTables(), empty);  // no duplicated rules

    ASSERT_TRUE(tables->install(podRules("a/eth0", 8080, "10.88.0.5")));
    ASSERT_TRUE(tables->ensureTables());
    EXPECT_EQ(tables->listOwned("a/eth0")->forwards.size(), 3u);
  }));
}

TEST_F(NftRulesetTest, ReadsBackExactlyWhatItInstalled) {
  ASSERT_OK(test::inPrivateNetns([] {
    auto tables = ruleset();
    ASSERT_TRUE(tables->ensureTables());
    AttachmentRules rules = podRules("a/eth0", 8080, "10.88.0.5");
    rules.forwards.push_back(
        {Protocol::kSctp, ip("192.0.2.1"), 9000, ip("10.88.0.5"), 9, "ip saddr 192.0.2.0/24"});
    ASSERT_TRUE(tables->install(rules));
    ASSERT_TRUE(tables->install(podRules("b/eth0", 9090, "10.88.0.6")));

    auto owned = tables->listOwned("a/eth0");
    ASSERT_OK(owned);
    ASSERT_EQ(owned->forwards.size(), rules.forwards.size());
    for (const auto& expected : rules.forwards) {  // the listing is in table order, not ours
      EXPECT_TRUE(std::ranges::any_of(owned->forwards, [&](const Forward& installed) {
        return matchesInstalled(expected, installed);
      })) << describe(expected);
    }
    ASSERT_EQ(owned->masquerades.size(), rules.masquerades.size());
    for (const auto& expected : rules.masquerades) {
      EXPECT_NE(std::ranges::find(owned->masquerades, expected), owned->masquerades.end());
    }
  }));
}

TEST_F(NftRulesetTest, RepeatedInstallOfTheSameRulesSucceeds) {
  ASSERT_OK(test::inPrivateNetns([] {
    auto tables = ruleset();
    ASSERT_TRUE(tables->ensureTables());
    ASSERT_TRUE(tables->install(podRules("a/eth0", 8080, "10.88.0.5")));
    auto again = tables->install(podRules("a/eth0", 8080, "10.88.0.5"));
    EXPECT_OK(again);
    EXPECT_EQ(tables->listOwned("a/eth0")->forwards.size(), 3u);
  }));
}

TEST_F(NftRulesetTest, ConflictNamesTheOtherOwnerAndInstallsNothing) {
  ASSERT_OK(test::inPrivateNetns([] {
    auto tables = ruleset();
    ASSERT_TRUE(tables->ensureTables());
    AttachmentRules first{"a/eth0", {}, {}};
    first.forwards.push_back({Protocol::kTcp, std::nullopt, 8080, ip("10.88.0.5"), 80, ""});
    ASSERT_TRUE(tables->install(first));
    const std::string before = listTables();

    AttachmentRules second{"b/eth0", {}, {}};
    second.forwards.push_back({Protocol::kTcp, std::nullopt, 7070, ip("10.88.0.6"), 80, ""});
    second.forwards.push_back({Protocol::kTcp, std::nullopt, 8080, ip("10.88.0.6"), 80, ""});
    auto clash = tables->install(second);
    ASSERT_FALSE(clash);
    EXPECT_EQ(clash.error().code, ErrorCode::kConflict);
    EXPECT_NE(clash.error().message.find("a/eth0"), std::string::npos) << clash.error().message;
    EXPECT_NE(clash.error().message.find("8080"), std::string::npos);
    EXPECT_EQ(listTables(), before);  // 7070 did not slip in
  }));
}

TEST_F(NftRulesetTest, RemoveDeletesOnlyTheOwnersElements) {
  ASSERT_OK(test::inPrivateNetns([] {
    auto tables = ruleset();
    ASSERT_TRUE(tables->ensureTables());
    AttachmentRules a = podRules("a/eth0", 8080, "10.88.0.5");
    a.forwards.push_back(
        {Protocol::kTcp, std::nullopt, 81, ip("10.88.0.5"), 80, "ip saddr 192.0.2.0/24"});
    ASSERT_TRUE(tables->install(a));
    ASSERT_TRUE(tables->install(podRules("b/eth0", 9090, "10.88.0.6")));

    auto removed = tables->remove("a/eth0");
    ASSERT_OK(removed);
    EXPECT_EQ(removed->forwards.size(), 4u);
    EXPECT_EQ(removed->masquerades.size(), 1u);
    EXPECT_TRUE(removed->podSubnets.empty()) << "shared: never removed with an owner";
    EXPECT_TRUE(tables->listOwned("a/eth0")->empty());
    EXPECT_EQ(tables->listOwned("b/eth0")->forwards.size(), 3u);
    EXPECT_EQ(listTables().find("comment \"a/eth0\""), std::string::npos);
  }));
}

// A conditional rule reads back as the forward it was written for, whatever the user's
// conditions hold, through the real nft (1.0.6 here): ranges and sets on the right of a match
// (the first cut's listing failed on them, and with it every owner's DEL), a user `ip daddr`
// (the first cut took it for the host IP), prefixes, marks, negations; with a host IP and
// without, in both families. readElements() sees each rule as its owner's, unidentified.
TEST_F(NftRulesetTest, ConditionalRulesReadBackAsPlannedWhateverTheConditionsHold) {
  const std::vector<std::pair<std::string, std::string>> shapes = {
      {"tcp dport 1-65535", "ip6 saddr fd00::/8"},
      {"tcp dport { 1, 2 }", "ip6 daddr { 2001:db8::1, 2001:db8::2 }"},
      {"ip daddr 192.0.2.1", "ip6 daddr 2001:db8::1"},
      {"ip saddr 192.0.2.0/24 meta mark 0x1", "meta mark != 0x1"},
      {"ip saddr != 10.0.0.0/8 tcp dport != 1-100", "ip6 saddr != fd00::/8"},
  };
  for (const auto& [v4, v6] : shapes) {
    SCOPED_TRACE(v4 + " / " + v6);
    ASSERT_OK(test::inPrivateNetns([&] {
      auto tables = ruleset();
      AttachmentRules rules{"c/eth0", {}, {}};
      rules.forwards = {
          {Protocol::kTcp, std::nullopt, 9101, ip("10.88.0.5"), 80, v4},
          {Protocol::kTcp, ip("192.0.2.2"), 9102, ip("10.88.0.5"), 80, v4},
          {Protocol::kUdp, ip("2001:db8::2"), 53, ip("fd00::5"), 5353, v6},
          {Protocol::kSctp, std::nullopt, 9, ip("fd00::5"), 9, v6},
      };
      rules.masquerades.push_back({ip("10.88.0.5"), MasqueradeScope::kPodSubnet});
      ASSERT_OK(tables->install(rules));

      auto owned = tables->listOwned("c/eth0");
      ASSERT_OK(owned);
      const RulesDiff difference = diff(rules, *owned);
      EXPECT_TRUE(difference.empty()) << difference.describeFirstMissing() << "\n" << listTables();
      EXPECT_EQ(owned->forwards.size(), 4u);

      auto elements = nft::readElements(*tables);
      ASSERT_OK(elements);
      const auto rulesOfC = std::ranges::count_if(elements->forwards, [](const auto& installed) {
        return installed.owner == "c/eth0" && isUnidentifiedRule(installed.forward) &&
               installed.ruleHandle.has_value();
      });
      EXPECT_EQ(rulesOfC, 4);

      auto removed = tables->remove("c/eth0");
      ASSERT_OK(removed);
      EXPECT_EQ(removed->forwards.size(), 4u);
      EXPECT_EQ(listTables().find("comment \"c/eth0\""), std::string::npos) << listTables();
    }));
  }
}

TEST_F(NftRulesetTest, PodSubnetsAreSharedAndOutliveTheAttachmentsInThem) {
  ASSERT_OK(test::inPrivateNetns([] {
    auto tables = ruleset();
    const AttachmentRules a = podRules("a/eth0", 8080, "10.88.0.5");
    ASSERT_OK(tables->install(a));
    ASSERT_OK(tables->install(podRules("b/eth0", 9090, "10.88.0.6")));  // the same subnet
    ASSERT_OK(tables->removeExact(a));
    ASSERT_OK(tables->remove("b/eth0"));
    auto state = nft::readElements(*tables);
    ASSERT_OK(state);
    EXPECT_TRUE(state->masquerades.empty());
    EXPECT_EQ(state->podSubnets, std::vector{prefix("10.88.0.0/16")}) << "no owner removes them";

    ASSERT_OK(tables->removePodSubnets({prefix("10.88.0.0/16")}));
    EXPECT_TRUE(nft::readElements(*tables)->podSubnets.empty());
    EXPECT_OK(tables->removePodSubnets({prefix("10.88.0.0/16")})) << "gone already is success";
  }));
}

TEST_F(NftRulesetTest, ASubnetNestedInAnotherNetworksIsServedByIt) {
  ASSERT_OK(test::inPrivateNetns([] {
    auto tables = ruleset();
    ASSERT_OK(tables->install(podRules("a/eth0", 8080, "10.88.0.5")));
    AttachmentRules nested = podRules("b/eth0", 9090, "10.88.5.6");
    nested.podSubnets = {prefix("10.88.5.0/24")};  // the kernel refuses it inside 10.88.0.0/16

    ASSERT_OK(tables->install(nested));

    auto owned = tables->listOwned("b/eth0");
    ASSERT_OK(owned);
    EXPECT_EQ(owned->podSubnets, std::vector{prefix("10.88.0.0/16")});
    EXPECT_TRUE(diff(nested, *owned).empty()) << "the wider subnet serves it";
    // A real clash is still a conflict with the subnets in the request.
    AttachmentRules clash = podRules("c/eth0", 8080, "10.88.0.7");
    clash.podSubnets = {prefix("10.88.7.0/24")};
    auto refused = tables->install(clash);
    ASSERT_FALSE(refused);
    EXPECT_EQ(refused.error().code, ErrorCode::kConflict) << refused.error().message;
  }));
}

TEST_F(NftRulesetTest, RemovingWhatIsGoneSucceeds) {
  ASSERT_OK(test::inPrivateNetns([] {
    auto tables = ruleset();
    auto noTables = tables->remove("a/eth0");  // no table at all yet
    ASSERT_OK(noTables);
    EXPECT_TRUE(noTables->empty());
    ASSERT_TRUE(tables->ensureTables());
    ASSERT_TRUE(tables->install(podRules("a/eth0", 8080, "10.88.0.5")));
    ASSERT_TRUE(tables->remove("a/eth0"));
    auto twice = tables->remove("a/eth0");
    ASSERT_TRUE(twice);
    EXPECT_TRUE(twice->empty());
  }));
}

TEST_F(NftRulesetTest, FastPathElementsReadBackTheSameThroughLibnftables) {
  ASSERT_OK(test::inPrivateNetns([] {
    auto tables = ruleset();
    ASSERT_TRUE(tables->install(podRules("a/eth0", 8080, "10.88.0.5")));
    AttachmentRules v6{"b/eth0", {}, {}};
    v6.forwards.push_back({Protocol::kSctp, ip("2001:db8::1"), 65535, ip("fd00::6"), 1, ""});
    // In the order a reading gives them back: the ip table's sets first.
    v6.masquerades.push_back({ip("10.88.0.9"), MasqueradeScope::kEverySource});
    v6.masquerades.push_back({ip("fd00::6"), MasqueradeScope::kPodSubnet});
    v6.podSubnets.push_back(prefix("fd00::/64"));
    ASSERT_TRUE(tables->install(v6));

    // listOwned reads the sets over raw netlink; readState() parses libnftables' JSON.
    auto listed = tables->readState();
    ASSERT_OK(listed);
    for (const char* owner : {"a/eth0", "b/eth0"}) {
      auto raw = tables->listOwned(owner);
      ASSERT_OK(raw);
      const AttachmentRules viaNft = listed->rulesOf(owner);
      EXPECT_EQ(raw->forwards, viaNft.forwards) << owner;
      EXPECT_EQ(raw->masquerades, viaNft.masquerades) << owner;
      EXPECT_EQ(raw->podSubnets, listed->podSubnets) << owner;
    }
    EXPECT_EQ(tables->listOwned("b/eth0")->masquerades, v6.masquerades);
    EXPECT_EQ(tables->listOwned("b/eth0")->podSubnets.size(), 2u);
    // nft prints what the fast path wrote as if nft had written it.
    const std::string text = listTables();
    EXPECT_NE(text.find("2001:db8::1 . sctp . 65535 comment \"b/eth0\" : fd00::6 . 1"),
              std::string::npos)
        << text;
    EXPECT_NE(text.find("fd00::6 comment \"b/eth0\""), std::string::npos) << text;
    EXPECT_NE(text.find("fd00::/64 . fd00::/64"), std::string::npos) << text;
  }));
}

TEST_F(NftRulesetTest, AddLeavesTheLayoutRulesAlone) {
  ASSERT_OK(test::inPrivateNetns([] {
    auto tables = ruleset();
    ASSERT_TRUE(tables->install(podRules("a/eth0", 8080, "10.88.0.5")));
    auto context = NftContext::create();
    // The JSON listing carries each rule's handle.
    const auto handles = [&] { return context->list("list chain ip hostport prerouting"); };
    const auto before = handles();
    ASSERT_TRUE(before);
    ASSERT_TRUE(tables->install(podRules("b/eth0", 9090, "10.88.0.6")));
    const auto after = handles();
    ASSERT_TRUE(after);
    EXPECT_EQ(*after, *before);  // same rule handles: nothing was flushed and re-added
  }));
}

TEST_F(NftRulesetTest, AddRecreatesADeletedTableWithItsLayout) {
  ASSERT_OK(test::inPrivateNetns([] {
    auto tables = ruleset();
    ASSERT_TRUE(tables->install(podRules("a/eth0", 8080, "10.88.0.5")));
    auto context = NftContext::create();
    ASSERT_TRUE(context->run("delete table ip hostport"));

    auto again = tables->install(podRules("b/eth0", 9090, "10.88.0.6"));
    ASSERT_OK(again);
    const std::string text = listTables();
    EXPECT_NE(text.find("table ip hostport"), std::string::npos);
    EXPECT_NE(text.find("fib daddr type local jump hostports"), std::string::npos) << text;
    EXPECT_EQ(tables->listOwned("b/eth0")->forwards.size(), 3u);
    EXPECT_EQ(tables->listOwned("a/eth0")->forwards.size(), 1u);  // its ip6 element survived
  }));
}

TEST_F(NftRulesetTest, FailedFastPathAddLeavesNothing) {
  ASSERT_OK(test::inPrivateNetns([] {
    auto tables = ruleset();
    ASSERT_TRUE(tables->install(podRules("a/eth0", 8080, "10.88.0.5")));
    const std::string before = listTables();
    // Every element of b but one is new; the clashing one (same key, other data) sinks them all.
    AttachmentRules b = podRules("b/eth0", 9090, "10.88.0.6");
    b.forwards.push_back({Protocol::kUdp, ip("192.0.2.1"), 8080, ip("10.88.0.6"), 53, ""});
    auto clash = tables->install(b);
    ASSERT_FALSE(clash);
    EXPECT_EQ(clash.error().code, ErrorCode::kConflict);
    EXPECT_NE(clash.error().message.find("a/eth0"), std::string::npos) << clash.error().message;
    EXPECT_EQ(listTables(), before);
  }));
}

TEST_F(NftRulesetTest, LayoutGuardRepairsWhatWasEditedAndKeepsElements) {
  ASSERT_OK(test::inPrivateNetns([] {
    LayoutGuard guard(ruleset());
    ASSERT_EQ(guard.check(), LayoutCheck::kLaidOut);
    auto tables = ruleset();
    ASSERT_TRUE(tables->install(podRules("a/eth0", 8080, "10.88.0.5")));
    EXPECT_EQ(guard.check(), LayoutCheck::kIntact);  // elements are not layout
    const std::string intact = listTables();
    const auto reference = layoutFingerprint();
    ASSERT_TRUE(reference);
    auto context = NftContext::create();

    for (const char* edit :
         {"flush chain ip hostport prerouting",
          "add rule ip6 hostport hostports tcp dport 22 accept", "delete chain ip hostport output",
          "insert rule ip hostport postrouting counter", "delete table ip6 hostport"}) {
      // Chains are deleted only once nothing refers to them.
      if (std::string_view(edit).starts_with("delete chain")) {
        ASSERT_TRUE(context->run(std::string("flush chain ip hostport output\n") + edit));
      } else {
        auto edited = context->run(edit);
        ASSERT_OK(edited);
      }
      EXPECT_NE(listTables(), intact) << edit;
      auto checked = guard.check();
      ASSERT_OK(checked);
      EXPECT_EQ(*checked, LayoutCheck::kRepaired) << edit;
      EXPECT_EQ(guard.check(), LayoutCheck::kIntact) << edit;
      const auto now = layoutFingerprint();  // not the listing: chain order there may differ
      ASSERT_TRUE(now);
      EXPECT_TRUE(*now == *reference) << edit;
    }
    // The ip table was only ever edited, never deleted: a's ip elements are all still there.
    EXPECT_EQ(tables->listOwned("a/eth0")->forwards.size(), 2u);
    EXPECT_EQ(tables->listOwned("a/eth0")->masquerades.size(), 1u);
  }));
}

TEST_F(NftRulesetTest, CarriesLibnftablesMessageInErrors) {
  ASSERT_OK(test::inPrivateNetns([] {
    auto context = NftContext::create();
    auto bad = context->run("add element ip hostport ports { tcp . 1 : 10.0.0.1 . 1 }");
    ASSERT_FALSE(bad);
    EXPECT_EQ(bad.error().code, ErrorCode::kKernel);
    EXPECT_TRUE(isNotFound(bad.error())) << bad.error().message;
  }));
}

TEST_F(NftRulesetTest, LibnftablesErrorsCarryTheirErrnoAsTheCause) {
  ASSERT_OK(test::inPrivateNetns([] {
    auto tables = NftRuleset::create();
    ASSERT_OK(tables);
    ASSERT_OK((*tables)->ensureTables());
    auto context = NftContext::create();
    ASSERT_OK(context);
    ASSERT_OK(context->run("add element ip hostport ports { tcp . 1 : 10.0.0.1 . 1 }"));
    auto held = context->run("add element ip hostport ports { tcp . 1 : 10.0.0.2 . 1 }");
    ASSERT_FALSE(held);
    EXPECT_EQ(held.error().cause, std::errc::file_exists) << held.error().message;
    EXPECT_TRUE(isAlreadyExists(held.error()));
    EXPECT_FALSE(isNotFound(held.error()));
    auto missing = context->run("delete element ip hostport ports { tcp . 2 }");
    ASSERT_FALSE(missing);
    EXPECT_EQ(missing.error().cause, std::errc::no_such_file_or_directory)
        << missing.error().message;
  }));
}

}  // namespace
}  // namespace hostport::nft::kernel
