// Forwards with conditions (conditionsV4: user nft matches) with the built plugin, with a real
// hostport-agent and standalone. A rule of the conditional chain is identified by its owner tag
// and our own part at its end, never by reading the user's matches: whatever they hold (a range
// or a set on the right of a match, their own `ip daddr`, a mark, a negation), the rule is written
// once, the reconciler leaves it alone, DEL removes it, and the next owner of the port gets the
// traffic. The first cut read the whole rule: a range made every DEL fail to list the chain (the
// agent released the lease anyway, and the rule took the next owner's traffic), and a user `ip
// daddr` passed for the host IP, so the reconciler added the rule again ten times a second.

#include <chrono>
#include <string>
#include <thread>
#include <tuple>
#include <vector>

#include "tests/netns/agent_plugin_fixture.h"
#include "tests/support/wait.h"

namespace hostport::test {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;
using Clock = std::chrono::steady_clock;

constexpr int kHostPort = 9101;
constexpr int kContainerPort = 80;

class ConditionsFixture : public AgentPluginTest {
 protected:
  /// ADD options for a static hostPort kHostPort -> kContainerPort with `conditions`
  /// (conditionsV4; none when empty), through the agent when one runs.
  AddOptions staticPort(const std::vector<std::string>& conditions) const {
    const std::vector<PortMapping> mappings = {{kHostPort, kContainerPort, "tcp"}};
    AddOptions options = agent_ ? withAgent("", mappings) : AddOptions{.mappings = mappings};
    if (!conditions.empty()) options.pluginKeys["conditionsV4"] = conditions;
    return options;
  }

  /// The rules of chain conditional tagged with the pod's owner.
  std::size_t rulesOf(const Pod& pod) {
    std::size_t count = 0;
    for (const auto& entry : entries()) {
      if (entry.set == "chain conditional" && entry.comment == pod.owner()) ++count;
    }
    return count;
  }

  /// True when the pod holds exactly `count` rules at every look over `span` (every 50 ms).
  bool holdsRulesThroughout(const Pod& pod, std::size_t count, std::chrono::milliseconds span) {
    const auto until = Clock::now() + span;
    do {
      if (const std::size_t now = rulesOf(pod); now != count) {
        ADD_FAILURE() << pod.label << " holds " << now << " conditional rules, not " << count;
        return false;
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(50));
    } while (Clock::now() < until);
    return true;
  }

  bool answersFromOutside(const std::string& label) {
    auto reply = tcpRequest(outside(), kNodeIpV4, kHostPort);
    return reply && reply->id == label + " tcp";
  }

  std::string agentLog() const { return agent_ ? agent_->log() : std::string(); }

  /// Grants kHostPort to a new pod-b: outside traffic to the port reaches pod-b, not a rule its
  /// old owner left, and no removal failed on the way.
  void expectTheNextOwnerGetsThePort() {
    Pod* next = addPod("pod-b", staticPort({}));
    ASSERT_NE(next, nullptr);
    auto nextServer = serve(*next, Transport::kTcp, kContainerPort);
    ASSERT_NE(nextServer, nullptr);
    EXPECT_THAT(tcpRequest(outside(), kNodeIpV4, kHostPort), RepliesFrom("pod-b tcp"));
    EXPECT_THAT(agentLog(), Not(HasSubstr("table.remove_failed")));
  }
};

using AgentConditionsTest = ConditionsFixture;

// Issue 29, item 1: `tcp dport 1-65535` left the rule at DEL, the lease was released all the
// same, and the rule took the next owner's traffic.
TEST_F(AgentConditionsTest, ARangeConditionIsRemovedAtDelAndTheNextOwnerOfThePortGetsItsTraffic) {
  ASSERT_NO_FATAL_FAILURE(startAgent());
  Pod* old = addPod("pod-a", staticPort({"tcp dport 1-65535"}));
  ASSERT_NE(old, nullptr);
  auto oldServer = serve(*old, Transport::kTcp, kContainerPort);  // still serving after its DEL
  ASSERT_NE(oldServer, nullptr);
  ASSERT_TRUE(answersFromOutside("pod-a"));
  ASSERT_EQ(rulesOf(*old), 1u);

  ASSERT_OK_AND_ASSIGN(auto deleted, node().delPlugin(*old));
  ASSERT_THAT(deleted, Succeeded());

  EXPECT_EQ(rulesOf(*old), 0u) << "DEL answered success with the rule left behind";
  EXPECT_EQ(leaseOf(*old), std::nullopt);
  ASSERT_NO_FATAL_FAILURE(expectTheNextOwnerGetsThePort());
}

// Issue 29, item 2: the user's `ip daddr` was read as the forward's host IP, so the reconciler
// found the forward missing and added the rule again at every pass (each nft write waking it
// again): 16 copies after 1.5 s, 201 after 20 s.
TEST_F(AgentConditionsTest, AUserDaddrIsNotTakenForTheHostIpAndTheRuleIsWrittenOnce) {
  ASSERT_NO_FATAL_FAILURE(startAgent());
  Pod* pod = addPod("pod-a", staticPort({std::string("ip daddr ") + kNodeIpV4}));
  ASSERT_NE(pod, nullptr);
  auto server = serve(*pod, Transport::kTcp, kContainerPort);
  ASSERT_NE(server, nullptr);

  EXPECT_TRUE(holdsRulesThroughout(*pod, 1, std::chrono::milliseconds(2000))) << agent_->describe();
  EXPECT_THAT(tcpRequest(outside(), kNodeIpV4, kHostPort), RepliesFrom("pod-a tcp"));
  const std::string log = agentLog();
  EXPECT_THAT(log, Not(HasSubstr("table.restored")));
  EXPECT_THAT(log, Not(HasSubstr("table.repair_storm")));
  EXPECT_THAT(log, Not(HasSubstr("table.repair_not_converging")));
}

// The reconciler removes an owner-tagged rule without a lease whatever its conditions hold (the
// rule of a DEL made while the agent was down, or one that could not be removed); a rule without
// our owner tag is someone else's and stays.
TEST_F(AgentConditionsTest, AnOwnerTaggedRuleWithoutALeaseGoesWhateverItsConditionsHold) {
  ASSERT_NO_FATAL_FAILURE(startAgent());
  Pod* pod = addPod("pod-a", staticPort({"tcp dport 1-65535"}));  // lays the table out
  ASSERT_NE(pod, nullptr);
  const std::string stray = "deadbeef/eth0";
  const std::string rule = "tcp dport { 1-65535 } ip daddr " + std::string(kNodeIpV4) +
                           " meta l4proto tcp th dport 9102 dnat ip to 10.99.0.9:80";
  ASSERT_OK(nodeNetns().exec(
      {"nft", "add rule ip hostport conditional " + rule + " comment \"" + stray + "\""}));
  ASSERT_OK(nodeNetns().exec(
      {"nft", "add rule ip hostport conditional " + rule + " comment \"not an owner\""}));

  const auto strayRules = [&] {
    std::size_t count = 0;
    for (const auto& entry : entries()) count += entry.comment == stray ? 1 : 0;
    return count;
  };
  EXPECT_TRUE(waitUntil([&] { return strayRules() == 0; }, std::chrono::milliseconds(3000)))
      << agent_->describe();
  EXPECT_EQ(ownedBy(entries(), "not an owner").size(), 1u);
  EXPECT_EQ(rulesOf(*pod), 1u) << "the leased rule is left as it is";
  EXPECT_TRUE(agent_->waitForLog("table.stray_removed owner=" + stray)) << agent_->describe();
}

/// One shape of user conditions: whether traffic from outside to the node IP meets them.
struct ConditionShape {
  std::string name;
  std::vector<std::string> conditions;
  bool matchesOutside;
};

void PrintTo(const ConditionShape& shape, std::ostream* os) { *os << shape.name; }

std::vector<ConditionShape> conditionShapes() {
  const std::string node = kNodeIpV4;
  return {
      {"PortRange", {"tcp dport 1-65535"}, true},
      {"PortSet", {"tcp dport { 9101, 9102 }"}, true},
      {"PortSetElsewhere", {"tcp dport { 1, 2 }"}, false},
      {"UserDaddr", {"ip daddr " + node}, true},
      {"DaddrSet", {"ip daddr { " + node + ", 192.0.2.2 }"}, true},
      {"SaddrPrefix", {"ip saddr 192.0.2.0/24"}, true},
      {"Mark", {"meta mark 0x1"}, false},
      {"NegatedMark", {"meta mark != 0x1"}, true},
      {"NegatedPrefix", {"ip saddr != 10.0.0.0/8"}, true},
      {"NegatedRangeInTwoParts", {"ip saddr 192.0.2.0/24", "tcp dport != 1-100"}, true},
  };
}

enum class Mode { kAgent, kStandalone };

class ConditionShapeTest : public ConditionsFixture,
                           public ::testing::WithParamInterface<std::tuple<ConditionShape, Mode>> {
};

TEST_P(ConditionShapeTest, TheRuleIsWrittenOnceRemovedAtDelAndTheNextOwnerGetsThePort) {
  const auto& [shape, mode] = GetParam();
  if (mode == Mode::kAgent) ASSERT_NO_FATAL_FAILURE(startAgent());
  Pod* old = addPod("pod-a", staticPort(shape.conditions));
  ASSERT_NE(old, nullptr);
  auto oldServer = serve(*old, Transport::kTcp, kContainerPort);
  ASSERT_NE(oldServer, nullptr);
  if (shape.matchesOutside) EXPECT_TRUE(answersFromOutside("pod-a"));
  if (mode == Mode::kAgent) {
    // The reconciler looks at the table at the nft write's event: it must find it as planned.
    EXPECT_TRUE(holdsRulesThroughout(*old, 1, std::chrono::milliseconds(1500)))
        << agent_->describe();
  } else {
    EXPECT_EQ(rulesOf(*old), 1u);
  }

  ASSERT_OK_AND_ASSIGN(auto deleted, node().delPlugin(*old));
  EXPECT_THAT(deleted, Succeeded());
  EXPECT_EQ(rulesOf(*old), 0u) << "the rule outlived its DEL";
  EXPECT_TRUE(ownedBy(entries(), old->owner()).empty());

  ASSERT_NO_FATAL_FAILURE(expectTheNextOwnerGetsThePort());
  EXPECT_THAT(agentLog(), Not(HasSubstr("table.repair_not_converging")));
}

INSTANTIATE_TEST_SUITE_P(Shapes, ConditionShapeTest,
                         ::testing::Combine(::testing::ValuesIn(conditionShapes()),
                                            ::testing::Values(Mode::kAgent, Mode::kStandalone)),
                         [](const auto& info) {
                           return std::get<0>(info.param).name +
                                  (std::get<1>(info.param) == Mode::kAgent ? "WithAgent"
                                                                           : "Standalone");
                         });

}  // namespace
}  // namespace hostport::test
