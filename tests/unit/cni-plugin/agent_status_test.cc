// STATUS's grace (cni-plugin/agent_status.h): the agent-unreachable-since record in a temp dir,
// with the clock moved by hand.

#include "cni-plugin/agent_status.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <filesystem>
#include <string>
#include <vector>

#include "common/atomic_file.h"
#include "tests/support/result_assertions.h"
#include "tests/support/temp_dir.h"

namespace hostport::cni {
namespace {

using namespace std::chrono_literals;
using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::IsEmpty;

constexpr const char* kBootId = "0f1e2d3c-4b5a-6978-8796-a5b4c3d2e1f0";
constexpr const char* kEarlierBootId = "11111111-2222-3333-4444-555555555555";

Result<void> unreachable() {
  return fail(ErrorCode::kUnavailable, "hostport-agent is not reachable at /run/x.sock");
}

class AgentStatusTest : public ::testing::Test {
 protected:
  Result<void> judge(const Result<void>& ready, std::chrono::seconds grace = 30s) {
    return judgeAgentStatus(ready, dir_.path(), grace, now_,
                            [this](const std::string& line) { warnings_.push_back(line); });
  }
  std::string record() const {
    auto text = readSmallFile(dir_ / kUnreachableSinceFile, 1024);
    return text && *text ? **text : std::string();
  }
  bool recorded() const { return std::filesystem::exists(dir_ / kUnreachableSinceFile); }

  test::TempDir dir_;
  BootInstant now_{kBootId, 3600s};
  std::vector<std::string> warnings_;
};

TEST_F(AgentStatusTest, FormatsAndParsesABootInstant) {
  EXPECT_EQ(formatBootInstant(now_), std::string(kBootId) + " 3600000\n");
  const auto parsed = parseBootInstant(formatBootInstant(now_));
  ASSERT_TRUE(parsed.has_value());
  EXPECT_EQ(parsed->bootId, kBootId);
  EXPECT_EQ(parsed->sinceBoot, 3600s);
  for (const char* bad :
       {"", "\n", "x 12", "0f1e2d3c-4b5a-6978-8796-a5b4c3d2e1f0",
        "0f1e2d3c-4b5a-6978-8796-a5b4c3d2e1f0 ", "0f1e2d3c-4b5a-6978-8796-a5b4c3d2e1f0 -5",
        "0f1e2d3c-4b5a-6978-8796-a5b4c3d2e1f0 12 13", "0F1E2D3C-4B5A-6978-8796-A5B4C3D2E1F0 12",
        "0f1e2d3c-4b5a-6978-8796-a5b4c3d2e1f0 1234567890123456789"}) {
    EXPECT_FALSE(parseBootInstant(bad).has_value()) << bad;
  }
}

TEST_F(AgentStatusTest, TheKernelClockHasABootIdAndMoves) {
  const BootInstant first = bootClockNow();
  const BootInstant second = bootClockNow();
  EXPECT_TRUE(parseBootInstant(formatBootInstant(first)).has_value()) << first.bootId;
  EXPECT_EQ(first.bootId, second.bootId);
  EXPECT_LE(first.sinceBoot, second.sinceBoot);
  EXPECT_GT(first.sinceBoot.count(), 0);
}

TEST_F(AgentStatusTest, AReadyAgentPassesAndLeavesNoRecord) {
  ASSERT_OK(judge({}));
  EXPECT_FALSE(recorded());
  EXPECT_THAT(warnings_, IsEmpty());
}

TEST_F(AgentStatusTest, TheFirstFailureIsRecordedAndPasses) {
  ASSERT_OK(judge(unreachable()));
  EXPECT_EQ(record(), formatBootInstant(now_));
  EXPECT_THAT(warnings_,
              ElementsAre("warning: hostport-agent is not reachable at /run/x.sock; STATUS "
                          "succeeds for up to 30 s (unreachable for 0 s)"));
  // Later failures keep the first moment.
  const std::string first = record();
  now_.sinceBoot += 10s;
  ASSERT_OK(judge(unreachable()));
  EXPECT_EQ(record(), first);
}

TEST_F(AgentStatusTest, FailsOnceTheOutageOutlastsTheGrace) {
  ASSERT_OK(judge(unreachable()));
  now_.sinceBoot += 30s;
  ASSERT_OK(judge(unreachable()));
  now_.sinceBoot += 1ms;
  const auto failed = judge(unreachable());
  ASSERT_FALSE(failed.has_value());
  EXPECT_EQ(failed.error().code, ErrorCode::kUnavailable);
  EXPECT_EQ(failed.error().message,
            "hostport-agent is not reachable at /run/x.sock (unreachable for 30 s, longer than "
            "the grace of 30 s)");
}

TEST_F(AgentStatusTest, AGraceOfZeroFailsAtOnceAndWritesNothing) {
  const auto failed = judge(unreachable(), 0s);
  ASSERT_FALSE(failed.has_value());
  EXPECT_EQ(failed.error().message, "hostport-agent is not reachable at /run/x.sock");
  EXPECT_FALSE(recorded());
}

TEST_F(AgentStatusTest, ARecordOfAnEarlierBootCountsAsNone) {
  ASSERT_OK(writeFileAtomically(dir_.path(), kUnreachableSinceFile,
                                formatBootInstant({kEarlierBootId, 5s}), Durability::kCache));
  ASSERT_OK(judge(unreachable()));
  EXPECT_EQ(record(), formatBootInstant(now_));
}

TEST_F(AgentStatusTest, ADamagedOrFutureRecordCountsAsNone) {
  for (const std::string& content :
       {std::string("garbage"), formatBootInstant({kBootId, now_.sinceBoot + 1s})}) {
    ASSERT_OK(writeFileAtomically(dir_.path(), kUnreachableSinceFile, content, Durability::kCache));
    ASSERT_OK(judge(unreachable()));
    EXPECT_EQ(record(), formatBootInstant(now_)) << content;
  }
}

TEST_F(AgentStatusTest, ARecordThatCannotBeWrittenIsAWarningNotAFailure) {
  const auto blocked = dir_ / "file";
  ASSERT_OK(writeFileAtomically(dir_.path(), "file", "x", Durability::kCache));
  const auto passed =
      judgeAgentStatus(unreachable(), blocked, 30s, now_,
                       [this](const std::string& line) { warnings_.push_back(line); });
  ASSERT_OK(passed);
  ASSERT_FALSE(warnings_.empty());
  EXPECT_THAT(warnings_[0], HasSubstr("warning: cannot"));
}

}  // namespace
}  // namespace hostport::cni
