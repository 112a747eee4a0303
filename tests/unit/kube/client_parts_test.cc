// The pure parts of the API client: the token file's rotation, the rate limiter, the backoff.

#include <gtest/gtest.h>

#include <fstream>

#include "kube/backoff.h"
#include "kube/bearer_token.h"
#include "kube/rate_limiter.h"
#include "tests/support/result_assertions.h"
#include "tests/support/temp_dir.h"

namespace hostport::kube {
namespace {

using namespace std::chrono_literals;

TEST(BearerTokenTest, ReadsTheFileAgainOnlyWhenItChanged) {
  test::TempDir dir;
  const auto path = dir / "token";
  std::ofstream(path) << "first\n";
  auto token = BearerToken::fromFile(path.string());
  EXPECT_EQ(token.current().value_or(""), "first");
  EXPECT_EQ(token.current().value_or(""), "first");
  EXPECT_EQ(token.reads(), 1);
  // The kubelet rotates a projected token by swapping a symlink: a new inode.
  std::ofstream(dir / "token.new") << "second";
  std::filesystem::rename(dir / "token.new", path);
  EXPECT_EQ(token.current().value_or(""), "second");
  EXPECT_EQ(token.reads(), 2);
}

TEST(BearerTokenTest, AnEmptyOrMissingFileIsAnErrorNamingIt) {
  test::TempDir dir;
  std::ofstream(dir / "token") << " \n";
  auto token = BearerToken::fromFile((dir / "token").string());
  auto empty = token.current();
  ASSERT_FALSE(empty);
  EXPECT_NE(empty.error().message.find("is empty"), std::string::npos);
  auto missing = BearerToken::fromFile((dir / "gone").string()).current();
  ASSERT_FALSE(missing);
  EXPECT_NE(missing.error().message.find("gone"), std::string::npos);
}

TEST(RateLimiterTest, AllowsTheBurstThenPacesAtQps) {
  const auto start = RateLimiter::Clock::time_point{} + 1h;
  RateLimiter limiter(5, 3, start);
  for (int i = 0; i < 3; ++i) EXPECT_EQ(limiter.reserve(start), start) << i;
  // Then one every 200 ms, each reservation after the one before.
  EXPECT_EQ(limiter.reserve(start), start + 200ms);
  EXPECT_EQ(limiter.reserve(start), start + 400ms);
  // Time refills the bucket up to the burst, no more.
  const auto later = start + 10s;
  for (int i = 0; i < 3; ++i) EXPECT_EQ(limiter.reserve(later), later) << i;
  EXPECT_GT(limiter.reserve(later), later);
}

TEST(BackoffTest, GrowsExponentiallyUpToTheCapWithFullJitter) {
  Backoff top({200ms, 5s, 2.0}, [] { return 0.999999; });
  EXPECT_NEAR(top.delay(1).count(), 200, 1);
  EXPECT_NEAR(top.delay(2).count(), 400, 1);
  EXPECT_NEAR(top.delay(5).count(), 3200, 1);
  EXPECT_NEAR(top.delay(9).count(), 5000, 1);
  Backoff bottom({200ms, 5s, 2.0}, [] { return 0.0; });
  EXPECT_EQ(bottom.delay(3), 0ms);
}

TEST(BackoffTest, NeverWaitsLessThanRetryAfter) {
  Backoff backoff({200ms, 5s, 2.0}, [] { return 0.5; });
  EXPECT_EQ(backoff.delay(1, 3s), 3000ms);
  EXPECT_EQ(backoff.delay(1, 600s), 5000ms) << "capped at the policy's max";
  EXPECT_EQ(parseRetryAfter(" 7 "), 7s);
  EXPECT_EQ(parseRetryAfter("Wed, 21 Oct 2015 07:28:00 GMT"), std::nullopt);
  EXPECT_EQ(parseRetryAfter("-1"), std::nullopt);
  EXPECT_EQ(parseRetryAfter("999999"), 3600s) << "capped";
}

}  // namespace
}  // namespace hostport::kube
