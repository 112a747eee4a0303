#include "agent/core/sticky_memory.h"

#include <gtest/gtest.h>

namespace hostport::agent::core {
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

TEST(StickyMemoryTest, KeepsTheLatestPodsThroughManyEvictions) {
  // Forgotten pods hand their slots to new ones; what is remembered must stay exact.
  StickyMemory memory(50);
  const DynamicPortRequest x{"x", 1, 1, PortProtocol::kTcp};
  for (int i = 0; i < 1000; ++i) {
    // Every pod has a differently sized record, so a reused slot's buffer grows and shrinks.
    std::vector<PortGrant> rows;
    for (int row = 0; row <= i % 5; ++row) {
      rows.push_back(dynamic(row == 0 ? "x" : std::string(row * 40, 'r'),
                             static_cast<uint16_t>(i * 5 + row + 1)));
    }
    memory.remember({"ns", "pod-" + std::to_string(i), ""}, i % 2 == 0 ? "default" : "media", rows);
    ASSERT_LE(memory.size(), 50u);
  }
  EXPECT_EQ(memory.size(), 50u);
  for (int i = 0; i < 1000; ++i) {
    const PodIdentity pod{"ns", "pod-" + std::to_string(i), ""};
    const std::string pool = i % 2 == 0 ? "default" : "media";
    if (i < 950) {
      EXPECT_FALSE(memory.previous(pod, pool, x)) << i;
    } else {
      EXPECT_EQ(memory.previous(pod, pool, x), i * 5 + 1) << i;
      EXPECT_FALSE(memory.previous(pod, i % 2 == 0 ? "media" : "default", x)) << i;
    }
  }
}

TEST(StickyMemoryTest, TellsPodsApartByNamespaceAndNameWithAnyText) {
  StickyMemory memory;
  const DynamicPortRequest x{"x", 1, 1, PortProtocol::kTcp};
  const std::string binary("n\0\xff", 3);
  memory.remember({"a", "b", ""}, "default", {dynamic("x", 1)});
  memory.remember({"ab", "c", ""}, "default", {dynamic("x", 2)});
  memory.remember({binary, std::string(5000, 'p'), ""}, "default", {dynamic("x", 3)});
  memory.remember({"a", "b", ""}, "default", {dynamic("", 4), dynamic("x", 5, 3)});
  EXPECT_EQ(memory.size(), 3u);
  EXPECT_FALSE(memory.previous({"a", "b", ""}, "default", x));  // replaced: x now has count 3
  EXPECT_EQ(memory.previous({"a", "b", ""}, "default", {"x", 1, 3, PortProtocol::kTcp}), 5);
  EXPECT_EQ(memory.previous({"a", "b", ""}, "default", {"", 1, 1, PortProtocol::kTcp}), 4);
  EXPECT_EQ(memory.previous({"ab", "c", ""}, "default", x), 2);
  EXPECT_EQ(memory.previous({binary, std::string(5000, 'p'), ""}, "default", x), 3);
  EXPECT_FALSE(memory.previous({binary, std::string(4999, 'p'), ""}, "default", x));
}

TEST(StickyMemoryTest, ForgetsAPodThatOptedOut) {
  StickyMemory memory;
  const PodIdentity pod{"db", "pg-0", ""};
  memory.remember(pod, "default", {dynamic("sql", 30001)});
  memory.remember({"db", "pg-1", ""}, "default", {dynamic("sql", 30002)});
  Lease optedOut;
  optedOut.pod = pod;
  optedOut.pool = "default";
  optedOut.ports = {dynamic("sql", 30005)};
  optedOut.sticky = false;
  memory.record(optedOut);
  EXPECT_FALSE(memory.previous(pod, "default", {"sql", 1, 1, PortProtocol::kTcp}));
  EXPECT_EQ(memory.size(), 1u);
  // Its slot is reused, and the memory still works.
  memory.remember({"db", "pg-2", ""}, "default", {dynamic("sql", 30003)});
  EXPECT_EQ(memory.previous({"db", "pg-2", ""}, "default", {"sql", 1, 1, PortProtocol::kTcp}),
            30003);
  EXPECT_EQ(memory.size(), 2u);
}

TEST(StickyMemoryTest, GivesItselfBackThroughItsEntriesOldestFirst) {
  StickyMemory memory(3);
  for (int i = 0; i < 5; ++i) {
    memory.remember({"ns", "pod-" + std::to_string(i), ""}, "default",
                    {dynamic("a", static_cast<uint16_t>(30000 + i)),
                     dynamic("b", static_cast<uint16_t>(31000 + i), 4, PortProtocol::kUdp)});
  }
  memory.remember({"ns", "pod-2", ""}, "default", {dynamic("a", 30022)});  // newest now
  const auto entries = memory.entries();
  ASSERT_EQ(entries.size(), 3u);
  EXPECT_EQ(entries[0].name, "pod-3");
  EXPECT_EQ(entries[1].name, "pod-4");
  EXPECT_EQ(entries[2].name, "pod-2");
  EXPECT_EQ(entries[1].namespaceName, "ns");
  EXPECT_EQ(entries[1].pool, "default");
  ASSERT_EQ(entries[1].ports.size(), 2u);
  EXPECT_EQ(entries[1].ports[1].hostPort, 31004);
  EXPECT_EQ(entries[1].ports[1].count, 4);
  EXPECT_EQ(entries[1].ports[1].protocol, PortProtocol::kUdp);

  StickyMemory copy(3);
  for (const auto& entry : entries) copy.apply(entry);
  EXPECT_EQ(copy.entries(), entries);
  // Applied to a smaller memory, the newest survive.
  StickyMemory small(1);
  for (const auto& entry : entries) small.apply(entry);
  ASSERT_EQ(small.entries().size(), 1u);
  EXPECT_EQ(small.entries()[0].name, "pod-2");
}

}  // namespace
}  // namespace hostport::agent::core
