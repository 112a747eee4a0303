// daemonset/agent.yaml, which kustomization.yaml turns into the agent's ConfigMap as it is, read
// by the agent's own parser: a key the agent does not know, or a pool it would refuse, fails here
// rather than as a crash loop on every node.

#include <gtest/gtest.h>

#include "agent/config/agent_config.h"
#include "agent/config/listen_address.h"

namespace hostport::agent::config {
namespace {

TEST(ShippedAgentConfigTest, ParsesWithTheAgentsOwnParser) {
  CommandLine flags;
  flags.configPath = HOSTPORT_DAEMONSET_AGENT_YAML;
  const auto config = resolveConfig(flags);
  ASSERT_TRUE(config.has_value()) << config.error().message;
  EXPECT_EQ(config->socketPath, "/run/hostport/agent.sock");
  EXPECT_EQ(config->stateDir, "/var/lib/hostport");
}

TEST(ShippedAgentConfigTest, DefaultPoolStaysClearOfTheNodePortRange) {
  CommandLine flags;
  flags.configPath = HOSTPORT_DAEMONSET_AGENT_YAML;
  const auto config = resolveConfig(flags);
  ASSERT_TRUE(config.has_value()) << config.error().message;
  const PortRange nodePorts{30000, 32767};
  bool hasDefault = false;
  for (const auto& pool : config->pools) {
    hasDefault = hasDefault || pool.name == "default";
    for (const auto& range : pool.ranges) {
      EXPECT_TRUE(range.last < nodePorts.first || range.first > nodePorts.last)
          << "pool " << pool.name << " overlaps the NodePort range: " << range.str();
    }
  }
  EXPECT_TRUE(hasDefault) << "pods without hostport.io/pool need a pool named default";
}

TEST(ShippedAgentConfigTest, MetricsPortIsTheOneThePodAnnotationNames) {
  CommandLine flags;
  flags.configPath = HOSTPORT_DAEMONSET_AGENT_YAML;
  const auto config = resolveConfig(flags);
  ASSERT_TRUE(config.has_value()) << config.error().message;
  const auto address = parseListenAddress(config->metricsAddress);
  ASSERT_TRUE(address.has_value()) << address.error().message;
  EXPECT_EQ(address->port, 9810) << "daemonset.yaml's prometheus.io/port and containerPort";
}

}  // namespace
}  // namespace hostport::agent::config
