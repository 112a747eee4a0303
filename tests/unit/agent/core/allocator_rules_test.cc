// The allocator with pool rules (pool_rules.h): refusals before anything is picked, the counts
// the quotas read, and rules replaced at run time (a config reload).
#include <gtest/gtest.h>

#include "agent/core/allocator.h"
#include "tests/fakes/fake_port_probe.h"
#include "tests/support/result_assertions.h"

namespace hostport::agent::core {
namespace {

class AllocatorRulesTest : public ::testing::Test {
 protected:
  static Allocator make(PoolRules rules, PortRange range = {30000, 30099}) {
    PoolSpec pool{"games", {range}, {}, Strategy::kLowest, 0, std::move(rules)};
    auto allocator = Allocator::create({std::move(pool)}, [] { return uint64_t{0}; });
    EXPECT_OK(allocator);
    return std::move(*allocator);
  }

  static AllocationRequest request(std::string id, PodIdentity pod, uint16_t count = 1,
                                   std::vector<StaticPortClaim> statics = {}) {
    AllocationRequest out;
    out.key = {std::move(id), "eth0"};
    out.pod = std::move(pod);
    out.pool = "games";
    if (count > 0) out.dynamics.push_back({"p", 7000, count, PortProtocol::kUdp});
    out.statics = std::move(statics);
    return out;
  }

  static std::vector<NamespaceUsage> namespaceUsage(const Allocator& allocator) {
    return allocator.usage().at(0).namespaces;
  }

  FakePortProbe probe_;
};

TEST_F(AllocatorRulesTest, RefusesANamespaceOutsideTheListBeforeProbingAnything) {
  auto allocator = make({{"games-*"}, {}, {}});
  const auto refused = allocator.allocate(request("a", {"web", "nginx", "u1"}), probe_);
  ASSERT_FALSE(refused);
  EXPECT_EQ(refused.error().code, ErrorCode::kNotAllowed);
  EXPECT_EQ(refused.error().refusal, Refusal::kNamespace);
  EXPECT_EQ(probe_.calls(), 0);
  EXPECT_EQ(allocator.leaseCount(), 0u);
  EXPECT_EQ(allocator.usage().at(0).used, 0u);
  EXPECT_OK(allocator.allocate(request("b", {"games-eu", "server-0", "u2"}), probe_));
}

TEST_F(AllocatorRulesTest, CountsARangeAsItsPortsAgainstTheNamespaceQuota) {
  auto allocator = make({{}, 10, {}});
  ASSERT_OK(allocator.allocate(request("a", {"games-a", "s-0", "u0"}, 8), probe_));
  const auto refused = allocator.allocate(request("b", {"games-a", "s-1", "u1"}, 3), probe_);
  ASSERT_FALSE(refused);
  EXPECT_EQ(refused.error().code, ErrorCode::kQuotaExceeded);
  EXPECT_EQ(refused.error().refusal, Refusal::kNamespaceQuota);
  EXPECT_OK(allocator.allocate(request("c", {"games-a", "s-2", "u2"}, 2), probe_));
  EXPECT_OK(allocator.allocate(request("d", {"games-b", "s-0", "u3"}, 10), probe_));
  EXPECT_EQ(namespaceUsage(allocator),
            (std::vector<NamespaceUsage>{{"games-a", 10}, {"games-b", 10}}));
}

TEST_F(AllocatorRulesTest, CountsEveryAttachmentOfOnePodAgainstThePodQuota) {
  auto allocator = make({{}, {}, 4});
  const PodIdentity pod{"games-a", "s-0", "u0"};
  ASSERT_OK(allocator.allocate(request("a", pod, 3), probe_));
  auto second = request("a2", pod, 2);
  const auto refused = allocator.allocate(second, probe_);
  ASSERT_FALSE(refused);
  EXPECT_EQ(refused.error().refusal, Refusal::kPodQuota);
  // The same name with a new UID is another pod (a StatefulSet re-created it).
  EXPECT_OK(allocator.allocate(request("b", {"games-a", "s-0", "u1"}, 4), probe_));
  // A released lease gives its ports back to the count.
  allocator.release({"a", "eth0"});
  EXPECT_OK(allocator.allocate(second, probe_));
}

TEST_F(AllocatorRulesTest, CountsStaticClaimsOnlyInsideThePool) {
  auto allocator = make({{"games-*"}, {}, 1});
  // 8080 is outside the pool: the request takes nothing from it and is not judged.
  EXPECT_OK(allocator.allocate(
      request("a", {"web", "nginx", "u"}, 0, {{8080, 80, PortProtocol::kTcp, std::nullopt}}),
      probe_));
  const auto inside = allocator.allocate(
      request("b", {"web", "x", "u"}, 0, {{30050, 80, PortProtocol::kTcp, std::nullopt}}), probe_);
  ASSERT_FALSE(inside);
  EXPECT_EQ(inside.error().refusal, Refusal::kNamespace);
}

TEST_F(AllocatorRulesTest, AnswersARepeatedAddEvenOverTheQuota) {
  auto allocator = make({{}, 2, {}});
  const auto first = allocator.allocate(request("a", {"games-a", "s-0", "u"}, 2), probe_);
  ASSERT_OK(first);
  const auto again = allocator.allocate(request("a", {"games-a", "s-0", "u"}, 2), probe_);
  ASSERT_OK(again);
  EXPECT_EQ(*again, *first);
}

TEST_F(AllocatorRulesTest, NewRulesKeepEveryLeaseAndRefuseNewRequests) {
  auto allocator = make({});
  ASSERT_OK(allocator.allocate(request("a", {"web", "nginx", "u0"}, 3), probe_));
  ASSERT_OK(allocator.allocate(request("b", {"games-a", "s-0", "u1"}, 3), probe_));

  ASSERT_OK(allocator.setRules("games", {{"games-*"}, 4, 3}));
  EXPECT_EQ(allocator.leaseCount(), 2u);  // nothing revoked
  EXPECT_EQ(allocator.pools().at(0).rules, (PoolRules{{"games-*"}, 4, 3}));
  const auto lost = allocator.allocate(request("c", {"web", "nginx-2", "u2"}), probe_);
  ASSERT_FALSE(lost);
  EXPECT_EQ(lost.error().refusal, Refusal::kNamespace);
  // The pod counts are rebuilt from the leases held when the pod quota appears.
  const auto full = allocator.allocate(request("d", {"games-a", "s-0", "u1"}), probe_);
  ASSERT_FALSE(full);
  EXPECT_EQ(full.error().refusal, Refusal::kPodQuota);
  EXPECT_OK(allocator.allocate(request("e", {"games-a", "s-1", "u3"}), probe_));

  ASSERT_OK(allocator.setRules("games", {}));
  EXPECT_OK(allocator.allocate(request("c", {"web", "nginx-2", "u2"}), probe_));
  EXPECT_EQ(allocator.setRules("nope", {}).error().code, ErrorCode::kNotFound);
  EXPECT_EQ(allocator.setRules("games", {{"Bad_*"}, {}, {}}).error().code,
            ErrorCode::kInvalidArgument);
}

TEST_F(AllocatorRulesTest, CountsRestoredLeasesToo) {
  auto allocator = make({{}, 2, {}});
  Lease lease;
  lease.key = {"a", "eth0"};
  lease.pod = {"games-a", "s-0", "u"};
  lease.pool = "games";
  lease.ports = {{"p", PortProtocol::kUdp, 30000, 7000, 2, std::nullopt, false}};
  ASSERT_OK(allocator.restore(lease));
  EXPECT_EQ(namespaceUsage(allocator), (std::vector<NamespaceUsage>{{"games-a", 2}}));
  const auto refused = allocator.allocate(request("b", {"games-a", "s-1", "u1"}), probe_);
  ASSERT_FALSE(refused);
  EXPECT_EQ(refused.error().refusal, Refusal::kNamespaceQuota);
}

// --- sticky ports, opting out ---

TEST_F(AllocatorRulesTest, OffersNoPreviousPortToAPodThatOptedOutAndForgetsIt) {
  auto allocator = make({});  // lowest free first, no reuse delay
  ASSERT_OK(allocator.allocate(request("x", {"db", "other", "u"}), probe_));  // 30000
  ASSERT_OK(allocator.allocate(request("a", {"db", "pg-0", "u0"}), probe_));  // 30001
  allocator.release({"x", "eth0"});
  allocator.release({"a", "eth0"});

  auto optedOut = request("b", {"db", "pg-0", "u1"});
  optedOut.sticky = false;
  const auto lease = allocator.allocate(optedOut, probe_);
  ASSERT_OK(lease);
  EXPECT_EQ(lease->ports.at(0).hostPort, 30000);  // not its previous 30001
  EXPECT_FALSE(lease->sticky);
  EXPECT_EQ(allocator.find({"b", "eth0"})->sticky, false);
  EXPECT_EQ(allocator.stickyPods(), 1u);  // "other" only: pg-0 was forgotten
  allocator.release({"b", "eth0"});

  // Sticky again, it has nothing to come back to: the lowest free port, not 30001.
  const auto again = allocator.allocate(request("c", {"db", "pg-0", "u2"}), probe_);
  ASSERT_OK(again);
  EXPECT_EQ(again->ports.at(0).hostPort, 30000);
}

TEST_F(AllocatorRulesTest, ReplaysStickyEntriesOldestFirst) {
  auto allocator = make({});
  const PortGrant grant{"p", PortProtocol::kUdp, 30042, 0, 1, std::nullopt, false};
  allocator.recallSticky({{"db", "pg-0", "games", {grant}, false}});
  const auto lease = allocator.allocate(request("a", {"db", "pg-0", "new-uid"}), probe_);
  ASSERT_OK(lease);
  EXPECT_EQ(lease->ports.at(0).hostPort, 30042);
  EXPECT_EQ(allocator.stickyEntries().size(), 1u);
  allocator.recallSticky({{"db", "pg-0", "", {}, true}});
  EXPECT_EQ(allocator.stickyPods(), 0u);
}

TEST_F(AllocatorRulesTest, AStaticClaimInAnotherPoolsRangeAnswersToThatPoolsRules) {
  // "games" allows games-* only; "default" anyone. A pod of another namespace that names the
  // default pool must not take a games port as a static hostPort.
  PoolSpec games{"games", {{30000, 30099}}, {}, Strategy::kLowest, 0, {{"games-*"}, {}, {}}};
  PoolSpec open{"default", {{31000, 31099}}, {}, Strategy::kLowest, 0, {}};
  auto created = Allocator::create({std::move(games), std::move(open)}, [] { return uint64_t{0}; });
  ASSERT_OK(created);
  Allocator allocator = std::move(*created);
  auto web = request("a", {"web", "nginx", "u1"}, 0, {{30005, 80, PortProtocol::kTcp, {}}});
  web.pool = "default";
  const auto refused = allocator.allocate(web, probe_);
  ASSERT_FALSE(refused);
  EXPECT_EQ(refused.error().refusal, Refusal::kNamespace);
  EXPECT_NE(refused.error().message.find("games"), std::string::npos) << refused.error().message;
  // An allowed namespace may, and the port counts toward games' usage.
  auto game = request("b", {"games-eu", "s-0", "u2"}, 0, {{30006, 80, PortProtocol::kTcp, {}}});
  game.pool = "default";
  ASSERT_OK(allocator.allocate(game, probe_));
  EXPECT_EQ(allocator.usage().at(0).namespaces, (std::vector<NamespaceUsage>{{"games-eu", 1}}));
}

TEST_F(AllocatorRulesTest, ARepeatedStaticClaimCountsOnceAgainstThePodQuota) {
  auto allocator = make({{}, {}, 1});
  const StaticPortClaim claim{30010, 80, PortProtocol::kTcp, {}};
  ASSERT_OK(allocator.allocate(request("a", {"games-a", "s-0", "u0"}, 0, {claim, claim}), probe_));
}

TEST_F(AllocatorRulesTest, JudgesARequestAloneInTheWordsOfAllocate) {
  // What the admission server asks: the rules as if nothing were held, no key, nothing changed.
  auto allocator = make({{"games-*"}, {}, 4});
  auto outsider = request("", {"web", "nginx", ""}, 1);
  outsider.key = {};
  const auto judged = allocator.judge(outsider);
  ASSERT_FALSE(judged);
  auto keyed = outsider;
  keyed.key = {"a", "eth0"};
  const auto allocated = allocator.allocate(keyed, probe_);
  ASSERT_FALSE(allocated);
  EXPECT_EQ(judged.error().message, allocated.error().message);
  EXPECT_EQ(judged.error().refusal, Refusal::kNamespace);

  EXPECT_EQ(allocator.judge(request("", {"games-a", "s-0", ""}, 5)).error().refusal,
            Refusal::kPodQuota);
  ASSERT_OK(allocator.allocate(request("b", {"games-a", "s-0", "u0"}, 4), probe_));
  const int probed = probe_.calls();
  // The pod holds its quota now; judged alone, the same request still passes.
  const auto alone = allocator.judge(request("", {"games-a", "s-0", "u0"}, 4));
  ASSERT_OK(alone);
  EXPECT_EQ(*alone, (std::vector<PoolDemand>{{"games", 4}}));
  EXPECT_EQ(probe_.calls(), probed);
  EXPECT_EQ(allocator.leaseCount(), 1u);
}

TEST_F(AllocatorRulesTest, JudgeNamesEveryPoolARequestTakesPortsFromItsOwnFirst) {
  PoolSpec games{"games", {{30000, 30099}}, {}, Strategy::kLowest, 0, {}};
  PoolSpec web{"web", {{31000, 31099}}, {PortProtocol::kTcp}, Strategy::kLowest, 0, {}};
  auto created = Allocator::create({std::move(games), std::move(web)}, [] { return uint64_t{0}; });
  ASSERT_OK(created);
  auto asked = request("", {"games-a", "s-0", ""}, 0,
                       {{30005, 80, PortProtocol::kTcp, {}}, {8080, 80, PortProtocol::kTcp, {}}});
  asked.pool = "web";
  asked.dynamics.push_back({"http", 80, 3, PortProtocol::kTcp});
  const auto demands = created->judge(asked);
  ASSERT_OK(demands);
  EXPECT_EQ(*demands, (std::vector<PoolDemand>{{"web", 3}, {"games", 1}}));
  // A protocol the pool does not serve, in allocate()'s words.
  asked.dynamics.push_back({"rtp", 5000, 1, PortProtocol::kUdp});
  const auto refused = created->judge(asked);
  ASSERT_FALSE(refused);
  EXPECT_EQ(refused.error().message, "port \"rtp\" asks for udp but pool \"web\" allows only tcp");
  asked.pool = "nope";
  EXPECT_EQ(created->judge(asked).error().message, "unknown pool \"nope\"");
}

}  // namespace
}  // namespace hostport::agent::core
