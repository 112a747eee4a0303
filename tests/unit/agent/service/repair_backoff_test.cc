// The reconciler's backoff for repairs that do not hold, with time passed in.

#include "agent/service/repair_backoff.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

namespace hostport::agent::service {
namespace {

using namespace std::chrono_literals;
using ::testing::ElementsAre;
using ::testing::IsEmpty;

const RepairBackoff::Clock::time_point kStart{};

TEST(RepairBackoffTest, CarriesOutARepairSeenForTheFirstTime) {
  RepairBackoff backoff;
  const auto verdict = backoff.judge({"restore a/eth0", "remove b/eth0"}, true, kStart);
  EXPECT_THAT(verdict.carryOut, ElementsAre(true, true));
  EXPECT_THAT(verdict.newlyStuck, IsEmpty());
}

// The repair wrote and nothing else changed, yet the next compare finds it again: writing it
// again would only repeat the write (and, through the nft command, wake the reconciler again).
TEST(RepairBackoffTest, HoldsBackARepairFoundAgainWhenNothingElseChangedAndSaysSoOnce) {
  RepairBackoff backoff;
  (void)backoff.judge({"restore a/eth0"}, false, kStart);
  backoff.carriedOut("restore a/eth0");

  const auto stuck = backoff.judge({"restore a/eth0"}, true, kStart + 100ms);
  EXPECT_THAT(stuck.carryOut, ElementsAre(false));
  EXPECT_THAT(stuck.newlyStuck, ElementsAre("restore a/eth0"));
  EXPECT_EQ(stuck.longestWait, RepairBackoff::kFirstWait);

  // Found again and again meanwhile: still held back, and not reported again.
  for (int i = 0; i < 20; ++i) {
    const auto again = backoff.judge({"restore a/eth0"}, true, kStart + 200ms + i * 10ms);
    EXPECT_THAT(again.carryOut, ElementsAre(false));
    EXPECT_THAT(again.newlyStuck, IsEmpty());
  }
}

TEST(RepairBackoffTest, WaitsTwiceAsLongEachTimeUpToTheLongestWait) {
  RepairBackoff backoff;
  auto now = kStart;
  (void)backoff.judge({"r"}, false, now);
  backoff.carriedOut("r");
  std::chrono::milliseconds expected = RepairBackoff::kFirstWait;
  for (int round = 0; round < 30; ++round) {
    // Found again at once after a repair that changed nothing: held back for `expected`.
    const auto held = backoff.judge({"r"}, true, now);
    ASSERT_THAT(held.carryOut, ElementsAre(false)) << round;
    EXPECT_THAT(backoff.judge({"r"}, true, now + expected - 1ms).carryOut, ElementsAre(false))
        << round;
    now += expected;
    ASSERT_THAT(backoff.judge({"r"}, true, now).carryOut, ElementsAre(true)) << round;
    backoff.carriedOut("r");
    expected = std::min(expected * 2, std::chrono::milliseconds(RepairBackoff::kLongestWait));
  }
  EXPECT_EQ(expected, RepairBackoff::kLongestWait);
}

// Someone flushing our map in a loop makes the same repair due again and again, but the ruleset
// moved in between: that proves nothing against the repair, which goes on at once.
TEST(RepairBackoffTest, ARepairFoundAgainAfterAForeignChangeIsNotHeldBack) {
  RepairBackoff backoff;
  for (int i = 0; i < 10; ++i) {
    const auto verdict = backoff.judge({"restore a/eth0"}, false, kStart + i * 100ms);
    EXPECT_THAT(verdict.carryOut, ElementsAre(true)) << i;
    EXPECT_THAT(verdict.newlyStuck, IsEmpty());
    backoff.carriedOut("restore a/eth0");
  }
}

// A failed write changed nothing: finding the repair again proves nothing about it.
TEST(RepairBackoffTest, ARepairWhoseWriteFailedIsNotHeldBack) {
  RepairBackoff backoff;
  (void)backoff.judge({"restore a/eth0"}, false, kStart);
  const auto verdict = backoff.judge({"restore a/eth0"}, true, kStart + 100ms);
  EXPECT_THAT(verdict.carryOut, ElementsAre(true));
  EXPECT_THAT(verdict.newlyStuck, IsEmpty());
}

TEST(RepairBackoffTest, ForgetsARepairNotFoundAnyMoreAndReportsTheStuckOnesThatWent) {
  RepairBackoff backoff;
  (void)backoff.judge({"stuck", "fine"}, false, kStart);
  backoff.carriedOut("stuck");
  (void)backoff.judge({"stuck"}, true, kStart + 100ms);

  const auto verdict = backoff.judge({}, true, kStart + 200ms);
  EXPECT_THAT(verdict.recovered, ElementsAre("stuck"));
  // Forgotten: found again later, it is carried out at once.
  EXPECT_THAT(backoff.judge({"stuck"}, true, kStart + 300ms).carryOut, ElementsAre(true));
}

TEST(RepairBackoffTest, HoldsBackOnlyTheRepairsThatDidNotHold) {
  RepairBackoff backoff;
  (void)backoff.judge({"restore a/eth0"}, false, kStart);
  backoff.carriedOut("restore a/eth0");
  const auto verdict = backoff.judge({"restore a/eth0", "restore b/eth0"}, true, kStart + 100ms);
  EXPECT_THAT(verdict.carryOut, ElementsAre(false, true));
}

}  // namespace
}  // namespace hostport::agent::service
