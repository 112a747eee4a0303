#include "agent/core/rule_counts.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

namespace hostport::agent::core {
namespace {

const PodIdentity kWeb0{"web", "web-0", "uid-0"};
const PodIdentity kWeb1{"web", "web-1", "uid-1"};
const PodIdentity kGame{"games", "server", "uid-2"};

PortGrant dynamicGrant(uint16_t hostPort, uint16_t count = 1) {
  return PortGrant{"p", PortProtocol::kTcp, hostPort, 8080, count, std::nullopt, false};
}

PortGrant staticGrant(uint16_t hostPort) {
  return PortGrant{"", PortProtocol::kTcp, hostPort, 80, 1, std::nullopt, true};
}

// Pool 0 is 30000-30099, pool 1 is 40000-40099.
PoolOfPort twoPools() {
  PoolOfPort poolOf(kPortSpace, kNoPool);
  for (uint32_t port = 30000; port <= 30099; ++port) poolOf[port] = 0;
  for (uint32_t port = 40000; port <= 40099; ++port) poolOf[port] = 1;
  return poolOf;
}

TEST(RuleCountsTest, CountsThePortsOfGrantsThatLieInThePool) {
  const PoolOfPort poolOf = twoPools();
  // A run across the end of the pool counts only what is inside.
  const std::vector<PortGrant> grants = {dynamicGrant(30098, 4), staticGrant(40000),
                                         staticGrant(80)};
  EXPECT_EQ(portsInPool(grants, poolOf, 0), 2u);
  EXPECT_EQ(portsInPool(grants, poolOf, 1), 1u);
  EXPECT_EQ(portsInPool({}, poolOf, 0), 0u);
}

TEST(RuleCountsTest, AsksOfAPoolItsDynamicRowsAndTheStaticClaimsInItsRanges) {
  const PoolOfPort poolOf = twoPools();
  AllocationRequest request;
  request.dynamics = {{"a", 8080, 3, PortProtocol::kTcp}, {"b", 9090, 1, PortProtocol::kUdp}};
  request.statics = {{30050, 80, PortProtocol::kTcp, std::nullopt},
                     {40001, 80, PortProtocol::kTcp, std::nullopt},
                     {40001, 80, PortProtocol::kTcp, std::nullopt},  // repeated: one claim
                     {40001, 81, PortProtocol::kTcp, std::nullopt},  // another mapping
                     {80, 80, PortProtocol::kTcp, std::nullopt}};    // in no pool
  EXPECT_EQ(askedOf(request, poolOf, 0, 0), 4u + 1u);
  EXPECT_EQ(askedOf(request, poolOf, 1, 0), 2u);
  EXPECT_EQ(askedOf(request, poolOf, 1, 1), 4u + 2u);
  EXPECT_EQ(askedOf(request, poolOf, 0, 1), 1u);
}

TEST(RuleCountsTest, CountsPortsPerNamespaceAndGivesThemBack) {
  RuleCounts counts(false);
  counts.add(kWeb0, 3);
  counts.add(kWeb1, 2);
  counts.add(kGame, 1);
  counts.add(PodIdentity{}, 4);  // no namespace: counted under ""
  EXPECT_EQ(counts.usageOf(kWeb0).namespaceHeld, 5u);
  EXPECT_EQ(counts.usageOf(kWeb0).podHeld, 0u);  // not counted per pod
  EXPECT_EQ(counts.namespaces(), (RuleCounts::Counts{{"web", 5}, {"games", 1}, {"", 4}}));
  counts.remove(kWeb0, 3);
  counts.remove(kGame, 1);
  EXPECT_EQ(counts.namespaces(), (RuleCounts::Counts{{"web", 2}, {"", 4}}));
  EXPECT_EQ(counts.usageOf(kGame).namespaceHeld, 0u);
}

TEST(RuleCountsTest, ChangesNothingForZeroPortsNorForWhatWasNeverCounted) {
  RuleCounts counts(true);
  counts.add(kWeb0, 0);
  EXPECT_TRUE(counts.namespaces().empty());
  counts.remove(kGame, 2);
  EXPECT_TRUE(counts.namespaces().empty());
  counts.add(kWeb0, 1);
  counts.remove(kWeb0, 5);  // never below zero: the entry goes
  EXPECT_TRUE(counts.namespaces().empty());
  EXPECT_EQ(counts.usageOf(kWeb0).podHeld, 0u);
}

TEST(RuleCountsTest, CountsPerPodOnlyWhenAskedTo) {
  RuleCounts counts(true);
  EXPECT_TRUE(counts.countsPods());
  counts.add(kWeb0, 3);
  counts.add(kWeb1, 2);
  counts.add(PodIdentity{}, 1);  // no pod identity: judged alone, never counted per pod
  EXPECT_EQ(counts.usageOf(kWeb0).podHeld, 3u);
  EXPECT_EQ(counts.usageOf(kWeb1).podHeld, 2u);
  EXPECT_EQ(counts.usageOf(kWeb0).namespaceHeld, 5u);
  // Another UID is another pod, even under the same name.
  EXPECT_EQ(counts.usageOf(PodIdentity{"web", "web-0", "uid-9"}).podHeld, 0u);
  counts.remove(kWeb0, 1);
  EXPECT_EQ(counts.usageOf(kWeb0).podHeld, 2u);
}

TEST(RuleCountsTest, StopsAndRestartsCountingPods) {
  RuleCounts counts(true);
  counts.add(kWeb0, 3);
  counts.countPods(false);
  EXPECT_FALSE(counts.countsPods());
  EXPECT_EQ(counts.usageOf(kWeb0).podHeld, 0u);
  counts.addPod(kWeb0, 3);  // not counting: ignored
  counts.countPods(true);
  EXPECT_EQ(counts.usageOf(kWeb0).podHeld, 0u);  // restarts from none
  counts.addPod(kWeb0, 3);
  counts.addPod(PodIdentity{}, 2);
  EXPECT_EQ(counts.usageOf(kWeb0).podHeld, 3u);
  EXPECT_EQ(counts.usageOf(kWeb0).namespaceHeld, 3u);  // addPod leaves the namespaces alone
  counts.countPods(true);                              // already counting: kept
  EXPECT_EQ(counts.usageOf(kWeb0).podHeld, 3u);
}

}  // namespace
}  // namespace hostport::agent::core
