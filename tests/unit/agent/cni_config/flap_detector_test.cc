// The flap detector (agent/cni_config/flap_detector.h), with the time passed in.

#include "agent/cni_config/flap_detector.h"

#include <gtest/gtest.h>

namespace hostport::agent::cni_config {
namespace {

using namespace std::chrono_literals;
using Change = FlapDetector::Change;

const Clock::time_point kStart{};

TEST(FlapDetectorTest, FiveRemovalsWithinAMinuteAreAFight) {
  FlapDetector detector({.maxRemovals = 5, .window = 60s, .quietPeriod = 120s});
  for (int i = 0; i < 4; ++i) EXPECT_EQ(detector.removalSeen(kStart + i * 10s), Change::kNone);
  EXPECT_EQ(detector.removalSeen(kStart + 40s), Change::kStarted);
  EXPECT_TRUE(detector.flapping());
  EXPECT_EQ(detector.removalSeen(kStart + 41s), Change::kNone) << "one start per fight";
}

TEST(FlapDetectorTest, RemovalsSpreadOverMoreThanTheWindowAreNot) {
  FlapDetector detector({.maxRemovals = 5, .window = 60s, .quietPeriod = 120s});
  for (int i = 0; i < 20; ++i) EXPECT_EQ(detector.removalSeen(kStart + i * 20s), Change::kNone);
  EXPECT_FALSE(detector.flapping());
}

TEST(FlapDetectorTest, AFightEndsAfterTheQuietPeriodWithAFreshCount) {
  FlapDetector detector({.maxRemovals = 2, .window = 60s, .quietPeriod = 120s});
  detector.removalSeen(kStart);
  ASSERT_EQ(detector.removalSeen(kStart + 1s), Change::kStarted);
  EXPECT_EQ(detector.quietEnds(), kStart + 121s);
  EXPECT_EQ(detector.tick(kStart + 120s), Change::kNone);
  EXPECT_EQ(detector.tick(kStart + 121s), Change::kEnded);
  EXPECT_FALSE(detector.flapping());
  EXPECT_EQ(detector.removalSeen(kStart + 122s), Change::kNone);
}

}  // namespace
}  // namespace hostport::agent::cni_config
