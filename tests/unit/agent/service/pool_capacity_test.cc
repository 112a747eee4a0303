#include "agent/service/pool_capacity.h"

#include <gtest/gtest.h>

#include "tests/fakes/fake_port_probe.h"

namespace hostport::agent::service {
namespace {

core::PoolSpec pool(std::string name, uint16_t first, uint16_t last,
                    std::vector<PortProtocol> protocols = {}) {
  core::PoolSpec spec;
  spec.name = std::move(name);
  spec.ranges = {{first, last}};
  spec.protocols = std::move(protocols);
  return spec;
}

TEST(PoolCapacityTest, IsThePoolSizeLessThePortsHostProcessesHold) {
  core::FakePortProbe probe;
  probe.bind(Protocol::kTcp, 30001);
  probe.bind(Protocol::kUdp, 30002);
  probe.bind(Protocol::kTcp, 40000);  // in no pool
  const auto capacities =
      poolCapacities({pool("default", 30000, 30009), pool("games", 31000, 31099)}, probe);
  EXPECT_EQ(capacities.at("default"), 8u);
  EXPECT_EQ(capacities.at("games"), 100u);
}

TEST(PoolCapacityTest, OnlyTheProtocolsThePoolServesCount) {
  core::FakePortProbe probe;
  probe.bind(Protocol::kUdp, 30001);
  probe.bind(Protocol::kTcp, 30002);
  EXPECT_EQ(poolCapacities({pool("web", 30000, 30009, {PortProtocol::kTcp})}, probe).at("web"), 9u);
  EXPECT_EQ(
      poolCapacities({pool("media", 30000, 30009, {PortProtocol::kTcpUdp})}, probe).at("media"),
      8u);
}

TEST(PoolCapacityTest, AClusterPoolHasNoNodeResource) {
  core::FakePortProbe probe;
  auto global = pool("global", 40000, 40099);
  global.scope = core::PoolScope::kCluster;
  const auto capacities = poolCapacities({pool("default", 30000, 30009), global}, probe);
  EXPECT_EQ(capacities.size(), 1u);
  EXPECT_FALSE(capacities.contains("global"));
}

}  // namespace
}  // namespace hostport::agent::service
