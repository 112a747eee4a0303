#include "agent/core/sticky_memory.h"

#include <gtest/gtest.h>

namespace hostport::agent {
namespace {

PortGrant dynamic(std::string name, uint16_t hostPort, uint16_t count = 1,
                  PortProtocol protocol = PortProtocol::kTcp) {
  return PortGrant{std::move(name), protocol, hostPort, 8080, count, std::nullopt, false};
}

TEST(StickyMemoryTest, RemembersThePortOfTheSameNameProtocolAndCount) {
  StickyMemory memory;
  const PodIdentity pod{"db", "pg-0", "uid-1"};
  memory.remember(pod, "default", {dynamic("sql", 30001), dynamic("rtp", 30010, 4)});
  EXPECT_EQ(memory.previous(pod, "default", {"sql", 5432, 1, PortProtocol::kTcp}), 30001);
  EXPECT_EQ(memory.previous(pod, "default", {"rtp", 5000, 4, PortProtocol::kTcp}), 30010);
  EXPECT_FALSE(memory.previous(pod, "default", {"rtp", 5000, 5, PortProtocol::kTcp}));
  EXPECT_FALSE(memory.previous(pod, "default", {"sql", 5432, 1, PortProtocol::kUdp}));
  EXPECT_FALSE(memory.previous(pod, "other", {"sql", 5432, 1, PortProtocol::kTcp}));
  // The uid changes when a StatefulSet recreates the pod; namespace/name is what counts.
  EXPECT_EQ(memory.previous({"db", "pg-0", "uid-2"}, "default", {"sql", 1, 1, PortProtocol::kTcp}),
            30001);
  EXPECT_FALSE(memory.previous({"db", "pg-1", ""}, "default", {"sql", 1, 1, PortProtocol::kTcp}));
}

TEST(StickyMemoryTest, KeepsOnlyTheLatestGrantsOfAPod) {
  StickyMemory memory;
  const PodIdentity pod{"db", "pg-0", ""};
  memory.remember(pod, "default", {dynamic("sql", 30001)});
  memory.remember(pod, "default", {dynamic("sql", 30007)});
  EXPECT_EQ(memory.size(), 1u);
  EXPECT_EQ(memory.previous(pod, "default", {"sql", 1, 1, PortProtocol::kTcp}), 30007);
}

TEST(StickyMemoryTest, IgnoresAnonymousPodsAndStaticOnlyGrants) {
  StickyMemory memory;
  memory.remember({}, "default", {dynamic("sql", 30001)});
  PortGrant fixed = dynamic("", 80);
  fixed.isStatic = true;
  memory.remember({"web", "w-0", ""}, "default", {fixed});
  EXPECT_EQ(memory.size(), 0u);
}

TEST(StickyMemoryTest, ForgetsTheLeastRecentlyGrantedPodWhenFull) {
  StickyMemory memory(2);
  memory.remember({"a", "p", ""}, "default", {dynamic("x", 1)});
  memory.remember({"b", "p", ""}, "default", {dynamic("x", 2)});
  memory.remember({"a", "p", ""}, "default", {dynamic("x", 3)});  // a is now the most recent
  memory.remember({"c", "p", ""}, "default", {dynamic("x", 4)});
  EXPECT_EQ(memory.size(), 2u);
  const DynamicPortRequest x{"x", 1, 1, PortProtocol::kTcp};
  EXPECT_EQ(memory.previous({"a", "p", ""}, "default", x), 3);
  EXPECT_FALSE(memory.previous({"b", "p", ""}, "default", x));
  EXPECT_EQ(memory.previous({"c", "p", ""}, "default", x), 4);
}

}  // namespace
}  // namespace hostport::agent
