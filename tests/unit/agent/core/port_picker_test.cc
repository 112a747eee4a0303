#include "agent/core/port_picker.h"

#include <gtest/gtest.h>

#include <random>
#include <set>

namespace hostport::agent::core {
namespace {

// Drains a stream: every candidate it would propose, in order.
std::vector<uint16_t> drain(CandidateStream& stream, std::size_t limit = 100000) {
  std::vector<uint16_t> out;
  while (out.size() < limit) {
    const auto next = stream.next();
    if (!next) break;
    out.push_back(*next);
  }
  return out;
}

class PortPickerTest : public ::testing::Test {
 protected:
  PortBitmap held_;
  PortBitmap excluded_;
  FreeView view_{held_, excluded_};
};

TEST_F(PortPickerTest, FindsRunsAcrossWordBoundaries) {
  for (uint16_t port = 60; port <= 130; ++port) held_.set(port);
  held_.set(133);
  EXPECT_EQ(view_.findRun(50, 200, 1), 50);
  EXPECT_EQ(view_.findRun(60, 200, 1), 131);
  EXPECT_EQ(view_.findRun(60, 200, 3), 134);  // 131-132 is too short
  EXPECT_EQ(view_.findRun(55, 200, 5), 55);
  EXPECT_EQ(view_.findRun(55, 200, 6), 134);
  EXPECT_FALSE(view_.findRun(60, 130, 1));
  EXPECT_TRUE(view_.isRunFree(131, 2));
  EXPECT_FALSE(view_.isRunFree(131, 3));
  EXPECT_FALSE(view_.isRunFree(65535, 2));
}

TEST_F(PortPickerTest, TreatsExcludedPortsAsBusy) {
  excluded_.set(10);
  EXPECT_FALSE(view_.isFree(10));
  EXPECT_EQ(view_.findRun(10, 20, 1), 11);
  EXPECT_EQ(view_.findRun(8, 20, 3), 11);
}

TEST_F(PortPickerTest, FindsTheTopPort) {
  EXPECT_EQ(view_.findRun(65535, 65535, 1), 65535);
  EXPECT_EQ(view_.findRun(65530, 65530, 6), 65530);
  held_.set(65535);
  EXPECT_FALSE(view_.findRun(65535, 65535, 1));
}

TEST_F(PortPickerTest, NumbersUnsortedRangesByOffset) {
  const PoolLayout layout({{200, 209}, {100, 104}});
  EXPECT_EQ(layout.size(), 15u);
  EXPECT_EQ(layout.widestRange(), 10u);
  EXPECT_EQ(layout.portAt(0), 100);
  EXPECT_EQ(layout.portAt(4), 104);
  EXPECT_EQ(layout.portAt(5), 200);
  EXPECT_EQ(layout.portAt(14), 209);
  EXPECT_EQ(layout.offsetOf(200), 5u);
  EXPECT_FALSE(layout.offsetOf(150));
  EXPECT_FALSE(layout.offsetOf(99));
  EXPECT_FALSE(layout.offsetOf(210));
  ASSERT_NE(layout.rangeOf(103), nullptr);
  EXPECT_EQ(*layout.rangeOf(103), (PortRange{100, 104}));
  EXPECT_EQ(layout.rangeOf(105), nullptr);
}

TEST_F(PortPickerTest, LowestFreeProposesAscendingFreePorts) {
  LowestFreePicker picker(PoolLayout({{200, 203}, {100, 103}}));
  held_.set(101);
  excluded_.set(200);
  auto stream = picker.candidates(view_, 1);
  EXPECT_EQ(drain(*stream), (std::vector<uint16_t>{100, 102, 103, 201, 202, 203}));
}

TEST_F(PortPickerTest, LowestFreeKeepsContiguousRunsInsideOneRange) {
  // 103 and 200 are consecutive offsets but not consecutive ports: no run may span them.
  LowestFreePicker picker(PoolLayout({{100, 103}, {200, 204}}));
  held_.set(201);
  auto stream = picker.candidates(view_, 3);
  EXPECT_EQ(drain(*stream), (std::vector<uint16_t>{100, 101, 202}));
  // Adjacent ranges are still separate ranges.
  LowestFreePicker adjacent(PoolLayout({{100, 101}, {102, 103}}));
  EXPECT_TRUE(drain(*adjacent.candidates(view_, 3)).empty());
}

TEST_F(PortPickerTest, LowestFreeProposesNothingWhenThePoolIsFull) {
  LowestFreePicker picker(PoolLayout({{100, 102}}));
  for (uint16_t port = 100; port <= 102; ++port) held_.set(port);
  EXPECT_FALSE(picker.candidates(view_, 1)->next());
}

TEST_F(PortPickerTest, RandomIsDeterministicWithASeededSource) {
  const auto firstPicks = [&](uint64_t seed) {
    RandomPicker picker(PoolLayout({{1000, 1999}}),
                        [rng = std::mt19937_64(seed)]() mutable { return rng(); });
    std::vector<uint16_t> picks;
    for (int i = 0; i < 20; ++i) picks.push_back(*picker.candidates(view_, 1)->next());
    return picks;
  };
  EXPECT_EQ(firstPicks(7), firstPicks(7));
  EXPECT_NE(firstPicks(7), firstPicks(8));
}

TEST_F(PortPickerTest, RandomSpreadsOverThePool) {
  RandomPicker picker(PoolLayout({{1000, 1999}}),
                      [rng = std::mt19937_64(42)]() mutable { return rng(); });
  std::set<int> tenths;
  for (int i = 0; i < 50; ++i) {
    const uint16_t port = *picker.candidates(view_, 1)->next();
    ASSERT_GE(port, 1000);
    ASSERT_LE(port, 1999);
    tenths.insert((port - 1000) / 100);
  }
  EXPECT_GE(tenths.size(), 8u);  // 50 uniform picks miss two of ten buckets with p < 1e-3
}

TEST_F(PortPickerTest, RandomProbesOnFromItsStartAndWrapsAround) {
  // A source that always lands on offset 2 (port 102).
  RandomPicker picker(PoolLayout({{100, 104}, {200, 201}}), [] { return uint64_t{2}; });
  held_.set(103);
  auto stream = picker.candidates(view_, 1);
  EXPECT_EQ(drain(*stream), (std::vector<uint16_t>{102, 104, 200, 201, 100, 101}));
}

TEST_F(PortPickerTest, RandomCoversEveryRunOnceWhenWrapping) {
  // Offset 3 (port 103): runs of two inside a range, those starting below 103 come last.
  RandomPicker picker(PoolLayout({{100, 105}}), [] { return uint64_t{3}; });
  auto stream = picker.candidates(view_, 2);
  EXPECT_EQ(drain(*stream), (std::vector<uint16_t>{103, 104, 100, 101, 102}));
}

TEST_F(PortPickerTest, RoundRobinStartsWithNeverUsedPortsInAscendingOrder) {
  RoundRobinPicker picker(PoolLayout({{100, 104}}));
  EXPECT_EQ(drain(*picker.candidates(view_, 1)), (std::vector<uint16_t>{100, 101, 102, 103, 104}));
}

TEST_F(PortPickerTest, RoundRobinOffersAJustReleasedPortLast) {
  RoundRobinPicker picker(PoolLayout({{100, 104}}));
  for (const uint16_t port : {100, 101, 102}) {
    held_.set(port);
    picker.taken(port);
  }
  held_.reset(101);
  picker.released(101);
  held_.reset(100);
  picker.released(100);
  EXPECT_EQ(drain(*picker.candidates(view_, 1)), (std::vector<uint16_t>{103, 104, 101, 100}));
}

TEST_F(PortPickerTest, RoundRobinIgnoresRepeatedAndForeignNotices) {
  RoundRobinPicker picker(PoolLayout({{100, 102}}));
  picker.released(101);  // already free: keeps its place
  picker.taken(5000);    // not in the pool
  picker.taken(100);
  picker.taken(100);
  held_.set(100);
  EXPECT_EQ(drain(*picker.candidates(view_, 1)), (std::vector<uint16_t>{101, 102}));
}

TEST_F(PortPickerTest, RoundRobinProposesOnlyFreeRunsInsideOneRange) {
  RoundRobinPicker picker(PoolLayout({{100, 103}, {200, 203}}));
  excluded_.set(201);
  EXPECT_EQ(drain(*picker.candidates(view_, 2)), (std::vector<uint16_t>{100, 101, 102, 202}));
}

}  // namespace
}  // namespace hostport::agent::core
