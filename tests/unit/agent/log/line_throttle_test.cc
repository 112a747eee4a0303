// The line throttle of bursty events (agent/log/line_throttle.h), on a clock the test moves.

#include "agent/log/line_throttle.h"

#include <gtest/gtest.h>

namespace hostport::agent::log {
namespace {

using namespace std::chrono_literals;

class LineThrottleTest : public ::testing::Test {
 protected:
  LineThrottle::Clock::time_point at(std::chrono::milliseconds offset) const {
    return start_ + offset;
  }
  LineThrottle::Clock::time_point start_ = LineThrottle::Clock::now();
};

TEST_F(LineThrottleTest, LetsTheFirstOccurrenceThroughAlone) {
  LineThrottle throttle;
  EXPECT_EQ(throttle.admit(at(0ms)), 1u);
}

TEST_F(LineThrottleTest, HoldsBackTheRestOfTheIntervalAndCountsThemInTheNextLine) {
  LineThrottle throttle(1s);
  EXPECT_EQ(throttle.admit(at(0ms)), 1u);
  EXPECT_EQ(throttle.admit(at(1ms)), std::nullopt);
  EXPECT_EQ(throttle.admit(at(500ms)), std::nullopt);
  EXPECT_EQ(throttle.admit(at(999ms)), std::nullopt);
  EXPECT_EQ(throttle.admit(at(1000ms)), 4u);  // three held back, and this one
  EXPECT_EQ(throttle.admit(at(1500ms)), std::nullopt);
  EXPECT_EQ(throttle.admit(at(2000ms)), 2u);
}

TEST_F(LineThrottleTest, CountsTheIntervalFromTheLastLineNotTheLastOccurrence) {
  LineThrottle throttle(1s);
  EXPECT_EQ(throttle.admit(at(0ms)), 1u);
  for (auto t = 100ms; t < 1000ms; t += 100ms) EXPECT_EQ(throttle.admit(at(t)), std::nullopt);
  EXPECT_EQ(throttle.admit(at(1000ms)), 10u);
}

TEST_F(LineThrottleTest, AQuietSpellLetsTheNextOccurrenceThroughAlone) {
  LineThrottle throttle(1s);
  EXPECT_EQ(throttle.admit(at(0ms)), 1u);
  EXPECT_EQ(throttle.admit(at(60s)), 1u);
}

}  // namespace
}  // namespace hostport::agent::log
