// Running a helper program (common/subprocess.h): the one exchange over a program's pipes that
// the agent, the test support and the benches share.

#include "common/subprocess.h"

#include <fcntl.h>
#include <gtest/gtest.h>
#include <signal.h>
#include <spawn.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <limits>
#include <string>

namespace hostport {
namespace {

using namespace std::chrono_literals;

ProgramRun shell(const std::string& script, std::string input = {}) {
  return {.argv = {"/bin/sh", "-c", script}, .env = {}, .input = std::move(input)};
}

TEST(SubprocessTest, FeedsTheInputAndReadsBothOutputs) {
  const std::string big(1 << 20, 'x');  // more than a pipe holds: both ends must be pumped
  auto outcome = runProgram(shell("cat; echo done >&2", big));
  ASSERT_TRUE(outcome) << outcome.error().message;
  EXPECT_TRUE(outcome->succeeded()) << outcome->describe();
  EXPECT_EQ(outcome->out, big);
  EXPECT_EQ(outcome->err, "done\n");
}

TEST(SubprocessTest, KeepsAtMostTheCapOfEachOutput) {
  ProgramRun run = shell("head -c 5000 /dev/zero");
  run.outputCap = 100;
  auto outcome = runProgram(run);
  ASSERT_TRUE(outcome) << outcome.error().message;
  EXPECT_EQ(outcome->out.size(), 100u);
}

TEST(SubprocessTest, AProgramThatReadsNothingIsAnOutcomeNotASignal) {
  auto outcome = runProgram(shell("exit 3", std::string(1 << 20, 'x')));
  ASSERT_TRUE(outcome) << outcome.error().message;
  EXPECT_EQ(outcome->describe(), "exited 3");
}

TEST(SubprocessTest, KillsAProgramPastItsDeadline) {
  ProgramRun run = shell("sleep 30");
  run.deadline = 200ms;
  const auto started = std::chrono::steady_clock::now();
  auto outcome = runProgram(run);
  ASSERT_FALSE(outcome);
  EXPECT_EQ(outcome.error().code, ErrorCode::kUnavailable);
  EXPECT_LT(std::chrono::steady_clock::now() - started, 20s);
}

TEST(SubprocessTest, AMissingProgramIsAnError) {
  auto outcome = runProgram({.argv = {"/nonexistent/program"}});
  ASSERT_FALSE(outcome);
  EXPECT_EQ(outcome.error().code, ErrorCode::kIo);
}

TEST(SubprocessTest, WithItsPidfdTheExchangeEndsWhenTheProgramExitsThoughAGrandchildHoldsThePipes) {
  int out[2], err[2];
  ASSERT_EQ(::pipe2(out, O_CLOEXEC), 0);
  ASSERT_EQ(::pipe2(err, O_CLOEXEC), 0);
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_adddup2(&actions, out[1], STDOUT_FILENO);
  posix_spawn_file_actions_adddup2(&actions, err[1], STDERR_FILENO);
  const char* argv[] = {"/bin/sh", "-c", "sleep 30 & echo $!; exit 0", nullptr};
  pid_t pid = 0;
  ASSERT_EQ(::posix_spawn(&pid, argv[0], &actions, nullptr, const_cast<char**>(argv), environ), 0);
  posix_spawn_file_actions_destroy(&actions);
  ::close(out[1]);
  ::close(err[1]);
  UniqueFd pidfd(static_cast<int>(::syscall(SYS_pidfd_open, pid, 0)));
  ASSERT_TRUE(pidfd.valid());
  ProgramStreams streams{UniqueFd(), UniqueFd(out[0]), UniqueFd(err[0])};
  std::string stdoutText, stderrText;
  const auto started = std::chrono::steady_clock::now();
  EXPECT_TRUE(exchangeWithProgram(streams, {}, stdoutText, stderrText,
                                  std::numeric_limits<std::size_t>::max(), started + 20s,
                                  pidfd.get()));
  int status = 0;
  ::waitpid(pid, &status, 0);
  // The grandchild printed its pid and still runs, its end of the pipes open: the exchange did
  // not wait for it.
  const pid_t grandchild = static_cast<pid_t>(std::stol(stdoutText));
  ASSERT_GT(grandchild, 0);
  EXPECT_EQ(::kill(grandchild, 0), 0);
  ::kill(grandchild, SIGKILL);
}

}  // namespace
}  // namespace hostport
