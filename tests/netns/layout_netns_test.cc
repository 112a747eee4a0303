// The layout that layout_messages.h writes over netlink is the layout nft makes of its text
// (table_layout.h): the same listing and the same bytecode, in a fresh netns and over a table that
// an older hostport laid out through nft. Each test runs on threads that unshare their own network
// namespaces (test::inPrivateNetns), so nothing touches the host's ruleset.

#include <gtest/gtest.h>

#include <functional>
#include <regex>
#include <string>

#include "nft/kernel/element_table.h"
#include "nft/kernel/nft_context.h"
#include "nft/kernel/nft_ruleset.h"
#include "nft/table_layout.h"
#include "tests/support/netns.h"
#include "tests/support/result_assertions.h"
#include "tests/support/subprocess.h"

namespace hostport::nft::kernel {
namespace {

/// The layout as nft text: the oracle. Kept here, apart from the code under test, as the
/// commands hostport ran through libnftables before the layout moved to netlink.
std::string layoutText(Family family) {
  const bool v4 = family == Family::kIPv4;
  const std::string f = v4 ? "ip" : "ip6", a = v4 ? "ipv4_addr" : "ipv6_addr";
  const std::string t = "add table " + f + " hostport\n";
  const std::string in = f + " hostport ";
  std::string out = t;
  out += "add map " + in + "ports { type inet_proto . inet_service : " + a + " . inet_service; }\n";
  out += "add map " + in + "ipports { type " + a + " . inet_proto . inet_service : " + a +
         " . inet_service; }\n";
  out += "add set " + in + "snatpods { type " + a + "; }\n";
  out += "add set " + in + "masqall { type " + a + "; }\n";
  out += "add set " + in + "podnets { type " + a + " . " + a + "; flags interval; }\n";
  out += "add chain " + in + "conditional\n";
  out += "add chain " + in + "hostports\n";
  out += "add chain " + in +
         "prerouting { type nat hook prerouting priority dstnat; policy accept; }\n";
  out += "add chain " + in + "output { type nat hook output priority -100; policy accept; }\n";
  out += "add chain " + in +
         "postrouting { type nat hook postrouting priority srcnat; policy accept; }\n";
  for (const char* chain : {"hostports", "prerouting", "output", "postrouting"}) {
    out += "flush chain " + in + chain + "\n";
  }
  out += "add rule " + in + "hostports jump conditional\n";
  out += "add rule " + in + "hostports dnat " + f + " to " + f +
         " daddr . meta l4proto . th dport map @ipports\n";
  out += "add rule " + in + "hostports dnat " + f + " to meta l4proto . th dport map @ports\n";
  out += "add rule " + in + "prerouting fib daddr type local jump hostports\n";
  out += "add rule " + in + "output fib daddr type local jump hostports\n";
  const std::string dnatTo = "add rule " + in + "postrouting ct status dnat " + f + " daddr @";
  out += dnatTo + "masqall masquerade\n";
  out += dnatTo + "snatpods " + f + " saddr . " + f + " daddr @podnets masquerade\n";
  if (v4) out += dnatTo + "snatpods ip saddr 127.0.0.0/8 masquerade\n";
  return out;
}

std::string bothLayoutsAsText() { return layoutText(Family::kIPv4) + layoutText(Family::kIPv6); }

/// What the kernel holds, as nft lists it and as bytecode (`--debug=netlink` prints every
/// rule's expressions and every set's flags).
struct Listing {
  std::string text;
  std::string bytecode;
  friend bool operator==(const Listing&, const Listing&) = default;
  friend void PrintTo(const Listing& listing, std::ostream* out) {
    *out << "\n" << listing.text << "\n--- bytecode ---\n" << listing.bytecode;
  }
};

Listing listing() {
  Listing out;
  auto text = test::runOk({"nft", "list", "ruleset"});
  EXPECT_OK(text);
  auto bytecode = test::runOk({"nft", "--debug=netlink", "list", "ruleset"});
  EXPECT_OK(bytecode);
  out.text = text.value_or("");
  // A rule's heading ends in its handle and its predecessor's, which a relayout renews.
  static const std::regex kHandles(R"(^(ip6? hostport \S+)( \d+)+$)", std::regex::multiline);
  out.bytecode = std::regex_replace(bytecode.value_or(""), kHandles, "$1");
  return out;
}

/// What nft's own text makes of an empty netns, or of `damage` done to its layout and repaired
/// by running the text again.
Listing laidOutByText(const std::function<void()>& damage = {}) {
  Listing out;
  EXPECT_OK(test::inPrivateNetns([&] {
    auto nft = NftContext::create();
    ASSERT_OK(nft);
    ASSERT_OK(nft->run(bothLayoutsAsText()));
    if (damage) {
      damage();
      ASSERT_OK(nft->run(bothLayoutsAsText()));
    }
    out = listing();
  }));
  return out;
}

class LayoutTest : public ::testing::Test {
 protected:
  void SetUp() override { HOSTPORT_SKIP_UNLESS_ROOT(); }
};

TEST_F(LayoutTest, NetlinkLaysOutWhatNftMakesOfTheText) {
  const Listing expected = laidOutByText();
  ASSERT_NE(expected.text.find("table ip6 hostport"), std::string::npos) << expected.text;
  ASSERT_OK(test::inPrivateNetns([&] {
    auto table = ElementTable::open();
    ASSERT_OK(table);
    ASSERT_OK(table->layOut());
    const Listing actual = listing();
    EXPECT_EQ(actual.text, expected.text);
    EXPECT_EQ(actual.bytecode, expected.bytecode);
  }));
}

TEST_F(LayoutTest, LaysOutAgainOverATableAnOlderHostportMadeThroughNft) {
  const Listing expected = laidOutByText();
  ASSERT_OK(test::inPrivateNetns([&] {
    auto nft = NftContext::create();
    ASSERT_OK(nft);
    ASSERT_OK(nft->run(bothLayoutsAsText()));
    // Elements and a conditional rule that the relayout must leave alone.
    ASSERT_OK(
        nft->run("add element ip hostport ports { tcp . 8080 : 10.88.0.5 . 80 }\n"
                 "add rule ip hostport conditional ip saddr 10.0.0.0/8 meta l4proto tcp "
                 "th dport 9090 dnat ip to 10.88.0.5:90 comment \"a/eth0\"\n"));
    const Listing before = listing();
    auto table = ElementTable::open();
    ASSERT_OK(table);
    ASSERT_OK(table->layOut());
    ASSERT_OK(table->layOut());  // idempotent
    EXPECT_EQ(listing(), before);
    ASSERT_OK(nft->run("flush map ip hostport ports\nflush chain ip hostport conditional"));
    EXPECT_EQ(listing(), expected);
  }));
}

TEST_F(LayoutTest, RepairsAFlushedChainAndADeletedOneAsNftDoes) {
  const auto damage = [] {
    ASSERT_OK(test::runOk({"nft", "flush chain ip hostport postrouting"}));
    ASSERT_OK(test::runOk({"nft", "delete set ip hostport masqall"}));  // no rule uses it now
    ASSERT_OK(test::runOk({"nft", "delete chain ip6 hostport output"}));
  };
  const Listing expected = laidOutByText(damage);
  ASSERT_OK(test::inPrivateNetns([&] {
    auto table = ElementTable::open();
    ASSERT_OK(table);
    ASSERT_OK(table->layOut());
    ASSERT_NO_FATAL_FAILURE(damage());
    ASSERT_OK(table->layOut());
    EXPECT_EQ(listing(), expected);
  }));
}

TEST_F(LayoutTest, AFirstAddLaysTheTableOutInItsOwnTransaction) {
  const Listing expected = laidOutByText();
  ASSERT_OK(test::inPrivateNetns([&] {
    auto ruleset = NftRuleset::create();
    ASSERT_OK(ruleset);
    AttachmentRules rules{"a/eth0", {}, {}};
    rules.forwards.push_back(
        {Protocol::kTcp, std::nullopt, 8080, *IpAddress::parse("10.88.0.5"), 80, ""});
    ASSERT_OK((*ruleset)->install(rules));
    auto owned = (*ruleset)->listOwned("a/eth0");
    ASSERT_OK(owned);
    EXPECT_EQ(owned->forwards, rules.forwards);
    ASSERT_OK((*ruleset)->remove("a/eth0"));
    EXPECT_EQ(listing(), expected);
  }));
}

}  // namespace
}  // namespace hostport::nft::kernel
