// The rate limiter of bursty events (agent/log/rate_limiter.h), on a clock the test moves.

#include "agent/log/rate_limiter.h"

#include <gtest/gtest.h>

namespace hostport::agent::log {
namespace {

using namespace std::chrono_literals;

class RateLimiterTest : public ::testing::Test {
 protected:
  RateLimiter::Clock::time_point at(std::chrono::milliseconds offset) const {
    return start_ + offset;
  }
  RateLimiter::Clock::time_point start_ = RateLimiter::Clock::now();
};

TEST_F(RateLimiterTest, LetsTheFirstOccurrenceThroughAlone) {
  RateLimiter limiter;
  EXPECT_EQ(limiter.admit(at(0ms)), 1u);
}

TEST_F(RateLimiterTest, HoldsBackTheRestOfTheIntervalAndCountsThemInTheNextLine) {
  RateLimiter limiter(1s);
  EXPECT_EQ(limiter.admit(at(0ms)), 1u);
  EXPECT_EQ(limiter.admit(at(1ms)), std::nullopt);
  EXPECT_EQ(limiter.admit(at(500ms)), std::nullopt);
  EXPECT_EQ(limiter.admit(at(999ms)), std::nullopt);
  EXPECT_EQ(limiter.admit(at(1000ms)), 4u);  // three held back, and this one
  EXPECT_EQ(limiter.admit(at(1500ms)), std::nullopt);
  EXPECT_EQ(limiter.admit(at(2000ms)), 2u);
}

TEST_F(RateLimiterTest, CountsTheIntervalFromTheLastLineNotTheLastOccurrence) {
  RateLimiter limiter(1s);
  EXPECT_EQ(limiter.admit(at(0ms)), 1u);
  for (auto t = 100ms; t < 1000ms; t += 100ms) EXPECT_EQ(limiter.admit(at(t)), std::nullopt);
  EXPECT_EQ(limiter.admit(at(1000ms)), 10u);
}

TEST_F(RateLimiterTest, AQuietSpellLetsTheNextOccurrenceThroughAlone) {
  RateLimiter limiter(1s);
  EXPECT_EQ(limiter.admit(at(0ms)), 1u);
  EXPECT_EQ(limiter.admit(at(60s)), 1u);
}

}  // namespace
}  // namespace hostport::agent::log
