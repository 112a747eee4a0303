// /proc/<pid>/stat parsing (agent/server/proc_stat.h): the state and the start time that tell a
// process from a later one with its pid, also when the command name holds spaces and ')'.

#include "agent/server/proc_stat.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <fstream>
#include <sstream>
#include <string>

namespace hostport::agent::server {
namespace {

using ::testing::HasSubstr;

// The text of a real line (a shell), fields 1-22 and a few after.
constexpr std::string_view kShell =
    "4242 (bash) S 4200 4242 4242 34816 4250 4194304 1160 5317 0 0 2 1 3 2 20 0 1 0 987654 "
    "8388608 1126 18446744073709551615 1 1 0 0 0 0 65536 3686404 1266761467 0 0 0 17 1 0 0 0 0 "
    "0\n";

TEST(ProcStatTest, ReadsTheStateAndTheStartTime) {
  auto stat = parseProcStat(kShell);
  ASSERT_TRUE(stat.has_value()) << stat.error().message;
  EXPECT_EQ(stat->state, 'S');
  EXPECT_EQ(stat->startTime, 987654u);
  EXPECT_FALSE(stat->exited());
}

TEST(ProcStatTest, CountsFieldsFromTheLastParenthesisSoACommandCannotShiftThem) {
  // A process may name itself "a) R 1 2 3 ..." (prctl PR_SET_NAME allows 15 bytes of anything).
  const std::string forged = "77 (x) Z 1 2 3) S 1 1 1 0 -1 0 0 0 0 0 0 0 0 0 20 0 1 0 5555 0 0\n";
  auto stat = parseProcStat(forged);
  ASSERT_TRUE(stat.has_value()) << stat.error().message;
  EXPECT_EQ(stat->state, 'S');
  EXPECT_EQ(stat->startTime, 5555u);
}

TEST(ProcStatTest, AZombieHasExited) {
  auto stat = parseProcStat("9 (sleep) Z 1 1 1 0 -1 0 0 0 0 0 0 0 0 0 20 0 1 0 42 0 0");
  ASSERT_TRUE(stat.has_value()) << stat.error().message;
  EXPECT_TRUE(stat->exited());
}

TEST(ProcStatTest, RefusesTextWithoutACommandName) {
  auto stat = parseProcStat("9 sleep S 1 1 1");
  ASSERT_FALSE(stat.has_value());
  EXPECT_THAT(stat.error().message, HasSubstr("no command name in parentheses"));
}

TEST(ProcStatTest, RefusesTextThatEndsBeforeTheStartTime) {
  auto stat = parseProcStat("9 (sleep) S 1 1 1 0 -1 0");
  ASSERT_FALSE(stat.has_value());
  EXPECT_THAT(stat.error().message, HasSubstr("ends before field"));
}

TEST(ProcStatTest, RefusesAStartTimeThatIsNotANumber) {
  auto stat = parseProcStat("9 (sleep) S 1 1 1 0 -1 0 0 0 0 0 0 0 0 0 20 0 1 0 12x 0 0");
  ASSERT_FALSE(stat.has_value());
  EXPECT_THAT(stat.error().message, HasSubstr("start time \"12x\" is not a whole number"));
}

TEST(ProcStatTest, ParsesThisProcessesOwnStat) {
  std::ifstream file("/proc/self/stat");
  std::stringstream text;
  text << file.rdbuf();
  auto stat = parseProcStat(text.str());
  ASSERT_TRUE(stat.has_value()) << stat.error().message;
  EXPECT_EQ(stat->state, 'R');  // reading its own stat, it runs
  EXPECT_GT(stat->startTime, 0u);
}

}  // namespace
}  // namespace hostport::agent::server
