// A cluster pool's rows take exactly the ports admission claimed (carried as static mappings),
// never a port the agent picks; a hostPort in a cluster pool that no row claimed is refused.

#include <gtest/gtest.h>

#include <random>
#include <set>

#include "agent/core/allocator.h"
#include "agent/core/cluster_claims.h"
#include "tests/fakes/fake_port_probe.h"
#include "tests/support/result_assertions.h"

namespace hostport::agent::core {
namespace {

PoolSpec nodePool() { return {"default", {{30000, 30099}}, {}, Strategy::kLowest}; }
PoolSpec clusterPool() {
  PoolSpec pool{"games", {{40000, 40099}}, {}, Strategy::kLowest};
  pool.scope = PoolScope::kCluster;
  return pool;
}

StaticPortClaim mapping(uint16_t hostPort, uint16_t containerPort,
                        PortProtocol protocol = PortProtocol::kTcp) {
  return {hostPort, containerPort, protocol, std::nullopt};
}

class ClusterPoolTest : public ::testing::Test {
 protected:
  void SetUp() override {
    auto made = Allocator::create({nodePool(), clusterPool()},
                                  [rng = std::mt19937_64(1)]() mutable { return rng(); });
    ASSERT_OK(made);
    allocator_.emplace(std::move(*made));
  }

  static AllocationRequest request(std::string id, std::string pool,
                                   std::vector<DynamicPortRequest> dynamics,
                                   std::vector<StaticPortClaim> statics) {
    AllocationRequest out;
    out.pod = {"ns", id, ""};
    out.key = {std::move(id), "eth0"};
    out.pool = std::move(pool);
    out.dynamics = std::move(dynamics);
    out.statics = std::move(statics);
    out.forwarding = Forwarding{};
    return out;
  }

  static bool mentions(const Error& error, std::string_view text) {
    return error.message.find(text) != std::string::npos;
  }

  std::optional<Allocator> allocator_;
  FakePortProbe probe_;
};

TEST_F(ClusterPoolTest, ARowTakesThePortItsClaimNamesAsANamedDynamicGrant) {
  const auto lease =
      allocator_->allocate(request("a", "games", {{"web", 8080}}, {mapping(40042, 8080)}), probe_);
  ASSERT_OK(lease);
  ASSERT_EQ(lease->ports.size(), 1u);
  const PortGrant& grant = lease->ports[0];
  EXPECT_EQ(grant.name, "web");
  EXPECT_EQ(grant.hostPort, 40042);
  EXPECT_EQ(grant.containerPort, 8080);
  EXPECT_FALSE(grant.isStatic);
  EXPECT_EQ(lease->pool, "games");
  EXPECT_EQ(allocator_->usage()[1].used, 1u);
}

TEST_F(ClusterPoolTest, ARangeAndATcpudpRowTakeEveryMappingOfTheirClaim) {
  const auto lease = allocator_->allocate(
      request("a", "games",
              {{"rtp", 5000, 3, PortProtocol::kUdp}, {"game", 7000, 1, PortProtocol::kTcpUdp}},
              {mapping(40011, 7000, PortProtocol::kUdp), mapping(40020, 5000, PortProtocol::kUdp),
               mapping(40021, 5001, PortProtocol::kUdp), mapping(40022, 5002, PortProtocol::kUdp),
               mapping(40011, 7000, PortProtocol::kTcp), mapping(8443, 443)}),
      probe_);
  ASSERT_OK(lease);
  ASSERT_EQ(lease->ports.size(), 3u);
  EXPECT_TRUE(lease->ports[0].isStatic);  // 8443 is in no pool: a plain static claim
  EXPECT_EQ(lease->ports[0].hostPort, 8443);
  EXPECT_EQ(lease->ports[1],
            (PortGrant{"rtp", PortProtocol::kUdp, 40020, 5000, 3, std::nullopt, false}));
  EXPECT_EQ(lease->ports[2],
            (PortGrant{"game", PortProtocol::kTcpUdp, 40011, 7000, 1, std::nullopt, false}));
}

TEST_F(ClusterPoolTest, AHostNetworkRowTakesAMappingWhoseContainerPortIsItsHostPort) {
  AllocationRequest asked = request(
      "a", "games", {{"game", 0, 2, PortProtocol::kUdp}},
      {mapping(40050, 40050, PortProtocol::kUdp), mapping(40051, 40051, PortProtocol::kUdp)});
  asked.forwarding.reset();
  const auto lease = allocator_->allocate(asked, probe_);
  ASSERT_OK(lease);
  EXPECT_EQ(lease->ports.at(0),
            (PortGrant{"game", PortProtocol::kUdp, 40050, 0, 2, std::nullopt, false}));
}

TEST_F(ClusterPoolTest, ARowWithoutItsClaimIsRefusedNamingTheRowAndThePool) {
  const auto lease = allocator_->allocate(request("a", "games", {{"web", 8080}}, {}), probe_);
  ASSERT_FALSE(lease);
  EXPECT_EQ(lease.error().code, ErrorCode::kInvalidArgument);
  EXPECT_TRUE(mentions(lease.error(), "port \"web\" asks cluster pool \"games\""))
      << lease.error().message;
  EXPECT_EQ(allocator_->leaseCount(), 0u);
}

TEST_F(ClusterPoolTest, APartialClaimOfARangeIsNoClaim) {
  const auto lease = allocator_->allocate(
      request("a", "games", {{"rtp", 5000, 3, PortProtocol::kUdp}},
              {mapping(40020, 5000, PortProtocol::kUdp), mapping(40021, 5001, PortProtocol::kUdp)}),
      probe_);
  ASSERT_FALSE(lease);
  EXPECT_TRUE(mentions(lease.error(), "lies in cluster pool \"games\"")) << lease.error().message;
}

TEST_F(ClusterPoolTest, AHandWrittenHostPortInAClusterPoolIsRefusedWhateverThePodsPool) {
  const auto lease =
      allocator_->allocate(request("a", "", {{"web", 8080}}, {mapping(40001, 80)}), probe_);
  ASSERT_FALSE(lease);
  EXPECT_EQ(lease.error().code, ErrorCode::kInvalidArgument);
  EXPECT_TRUE(mentions(lease.error(), "hostPort 40001/tcp lies in cluster pool \"games\""))
      << lease.error().message;
}

TEST_F(ClusterPoolTest, AClaimedPortHeldOrBoundIsAConflictAndLeavesNothing) {
  ASSERT_OK(
      allocator_->allocate(request("a", "games", {{"web", 8080}}, {mapping(40001, 8080)}), probe_));
  const auto held =
      allocator_->allocate(request("b", "games", {{"web", 8080}}, {mapping(40001, 8080)}), probe_);
  ASSERT_FALSE(held);
  EXPECT_EQ(held.error().code, ErrorCode::kConflict);
  EXPECT_TRUE(mentions(held.error(), "a/eth0")) << held.error().message;

  probe_.bind(Protocol::kUdp, 40003);
  const auto bound = allocator_->allocate(
      request("c", "games", {{"dns", 53, 1, PortProtocol::kTcpUdp}},
              {mapping(40003, 53, PortProtocol::kTcp), mapping(40003, 53, PortProtocol::kUdp)}),
      probe_);
  ASSERT_FALSE(bound);
  EXPECT_EQ(bound.error().code, ErrorCode::kConflict);
  EXPECT_TRUE(mentions(bound.error(), "on the host")) << bound.error().message;
  EXPECT_EQ(allocator_->leaseCount(), 1u);
}

TEST_F(ClusterPoolTest, TheAgentNeverPicksAClusterPoolsPortForANodePoolRow) {
  // The node pool's rows are picked from the node pool alone, and a cluster pool is never
  // anyone's fallback: with the node pool full, a row fails rather than spill over.
  auto made = Allocator::create(
      {PoolSpec{"default", {{30000, 30000}}, {}, Strategy::kLowest}, clusterPool()},
      [] { return uint64_t{4}; });
  ASSERT_OK(made);
  ASSERT_OK(made->allocate(request("a", "", {{"web", 8080}}, {}), probe_));
  const auto full = made->allocate(request("b", "", {{"web", 8080}}, {}), probe_);
  ASSERT_FALSE(full);
  EXPECT_EQ(full.error().code, ErrorCode::kExhausted);
}

TEST_F(ClusterPoolTest, TheJudgeCountsAClaimedRowOnceBeforeAndAfterItsClaim) {
  const auto before = allocator_->judge(request("", "games", {{"web", 8080}}, {}));
  ASSERT_OK(before);
  const auto after =
      allocator_->judge(request("", "games", {{"web", 8080}}, {mapping(40001, 8080)}));
  ASSERT_OK(after);
  EXPECT_EQ(*before, *after);
  EXPECT_EQ(after->at(0), (PoolDemand{"games", 1}));
}

TEST_F(ClusterPoolTest, AClaimedPortComesBackAfterRelease) {
  const auto first =
      allocator_->allocate(request("a", "games", {{"web", 8080}}, {mapping(40007, 8080)}), probe_);
  ASSERT_OK(first);
  ASSERT_TRUE(allocator_->release(first->key));
  // Quarantine is the node's rule for the ports it picks; a claim is the cluster's decision.
  const auto again =
      allocator_->allocate(request("b", "games", {{"web", 8080}}, {mapping(40007, 8080)}), probe_);
  ASSERT_OK(again);
  EXPECT_EQ(again->ports.at(0).hostPort, 40007);
}

TEST_F(ClusterPoolTest, ManyRowsOfOneContainerPortEachTakeAMappingOfTheirOwn) {
  // The most a pod may ask: every row and every mapping alike, which the matching must sort out
  // one to one, by lookups rather than by walking every mapping for every port.
  auto made = Allocator::create({nodePool(), PoolSpec{"games",
                                                      {{40000, 40999}},
                                                      {},
                                                      Strategy::kLowest,
                                                      kDefaultReuseDelaySeconds,
                                                      {},
                                                      PoolScope::kCluster}},
                                [] { return uint64_t{1}; });
  ASSERT_OK(made);
  std::vector<DynamicPortRequest> rows;
  std::vector<StaticPortClaim> mappings;
  for (uint16_t i = 0; i < kMaxPortsPerRequest / 2; ++i) {
    rows.push_back({"p" + std::to_string(i), 80, 1, PortProtocol::kTcp});
    mappings.push_back(mapping(static_cast<uint16_t>(40000 + 2 * i), 80));
  }
  const auto lease = made->allocate(request("a", "games", rows, mappings), probe_);
  ASSERT_OK(lease);
  std::set<uint16_t> ports;
  for (const auto& grant : lease->ports) ports.insert(grant.hostPort);
  EXPECT_EQ(ports.size(), kMaxPortsPerRequest / 2);
}

TEST(PoolScopeTest, NamesParseBackAndOthersAreRefusedQuoted) {
  for (const auto scope : {PoolScope::kNode, PoolScope::kCluster}) {
    EXPECT_EQ(parseScope(scopeName(scope)), scope);
  }
  const auto bad = parseScope("global");
  ASSERT_FALSE(bad);
  EXPECT_EQ(bad.error().message, "\"global\" is not node or cluster");
}

}  // namespace
}  // namespace hostport::agent::core
