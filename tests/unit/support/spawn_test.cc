#include "tests/support/spawn.h"

#include <fcntl.h>
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "common/unique_fd.h"
#include "tests/support/result_assertions.h"

namespace hostport::test {
namespace {

using ::testing::HasSubstr;

/// A shell child whose stdout is a pipe: what it printed, and how it ended.
struct ShellRun {
  std::string output;
  int status = 0;
};

/// Spawns /bin/sh -c `script` in the caller's netns with `env`, stdin /dev/null, and waits.
Result<ShellRun> runShell(const std::string& script, std::vector<std::string> env = {}) {
  int fds[2];
  if (::pipe2(fds, O_CLOEXEC) != 0) return failSystem(ErrorCode::kIo, "pipe2", errno);
  UniqueFd read(fds[0]);
  UniqueFd write(fds[1]);
  UniqueFd devNull(::open("/dev/null", O_RDONLY | O_CLOEXEC));
  HOSTPORT_TRY(const pid_t pid, spawn({.argv = {"/bin/sh", "-c", script},
                                       .env = std::move(env),
                                       .stdinFd = devNull.get(),
                                       .stdoutFd = write.get(),
                                       .stderrFd = write.get()}));
  write.reset();
  ShellRun run;
  char buffer[256];
  ssize_t n;
  while ((n = ::read(read.get(), buffer, sizeof buffer)) > 0 || (n < 0 && errno == EINTR)) {
    if (n > 0) run.output.append(buffer, static_cast<size_t>(n));
  }
  while (::waitpid(pid, &run.status, 0) < 0 && errno == EINTR) {
  }
  return run;
}

TEST(SpawnTest, RunsTheProgramWithTheGivenDescriptorsAndOnlyTheGivenEnvironment) {
  ASSERT_OK_AND_ASSIGN(const ShellRun run,
                       runShell("echo \"out:$HPT_GIVEN:${HOME-unset}\"", {"HPT_GIVEN=yes"}));
  EXPECT_TRUE(WIFEXITED(run.status) && WEXITSTATUS(run.status) == 0) << run.status;
  EXPECT_EQ(run.output, "out:yes:unset\n");
}

TEST(SpawnTest, PassesTheSanitizersOptionsOnUnlessTheRequestSetsThem) {
  // What the sanitizer stage sets (scripts/test.sh), so the agents and plugins it starts report;
  // that stage runs this test too, so its own values come back afterwards.
  std::vector<std::pair<std::string, std::optional<std::string>>> saved;
  for (const char* name : {"LSAN_OPTIONS", "UBSAN_OPTIONS"}) {
    const char* value = std::getenv(name);
    saved.emplace_back(name, value == nullptr ? std::nullopt : std::optional<std::string>(value));
  }
  ::setenv("LSAN_OPTIONS", "report_objects=1", 1);
  ::setenv("UBSAN_OPTIONS", "from_parent=1", 1);
  const auto run = runShell("echo \"$LSAN_OPTIONS:$UBSAN_OPTIONS\"", {"UBSAN_OPTIONS=given=1"});
  for (const auto& [name, value] : saved) {
    value ? ::setenv(name.c_str(), value->c_str(), 1) : ::unsetenv(name.c_str());
  }
  ASSERT_OK(run);
  EXPECT_EQ(run->output, "report_objects=1:given=1\n");
}

TEST(SpawnTest, DoesNotLeakADescriptorOpenedWithoutCloexecIntoTheChild) {
  UniqueFd leaky(::open("/dev/null", O_RDONLY));  // no O_CLOEXEC on purpose
  ASSERT_TRUE(leaky.valid());
  const std::string fd = std::to_string(leaky.get());
  ASSERT_OK_AND_ASSIGN(const ShellRun run, runShell("if [ -e /proc/$$/fd/" + fd +
                                                    " ]; then echo leaked; fi; echo done"));
  EXPECT_EQ(run.output, "done\n");
}

TEST(SpawnTest, ResetsASignalTheTestProcessIgnores) {
  struct sigaction ignore {};
  ignore.sa_handler = SIG_IGN;
  struct sigaction saved {};
  ASSERT_EQ(::sigaction(SIGPIPE, &ignore, &saved), 0);
  auto run = runShell("grep '^SigIgn:' /proc/$$/status");
  ::sigaction(SIGPIPE, &saved, nullptr);
  ASSERT_OK(run);
  EXPECT_EQ(run->output, "SigIgn:\t0000000000000000\n");
}

TEST(SpawnTest, ReportsAProgramThatCannotBeExecutedWithItsErrno) {
  UniqueFd devNull(::open("/dev/null", O_RDWR | O_CLOEXEC));
  const auto pid = spawn({.argv = {"/nonexistent/hpt-no-such-program"},
                          .stdinFd = devNull.get(),
                          .stdoutFd = devNull.get(),
                          .stderrFd = devNull.get()});
  ASSERT_FALSE(pid.has_value()) << "pid " << *pid;
  EXPECT_EQ(pid.error().code, ErrorCode::kIo);
  EXPECT_EQ(pid.error().message,
            "cannot start /nonexistent/hpt-no-such-program: No such file or directory");
  EXPECT_EQ(pid.error().cause, std::errc::no_such_file_or_directory);
}

TEST(SpawnTest, ReportsANetnsPathThatCannotBeOpened) {
  UniqueFd devNull(::open("/dev/null", O_RDWR | O_CLOEXEC));
  const auto pid = spawn({.argv = {"/bin/true"},
                          .netns = SpawnNetns::kJoin,
                          .netnsPath = "/nonexistent/hpt-netns",
                          .stdinFd = devNull.get(),
                          .stdoutFd = devNull.get(),
                          .stderrFd = devNull.get()});
  ASSERT_FALSE(pid.has_value());
  EXPECT_EQ(pid.error().message, "open /nonexistent/hpt-netns: No such file or directory");
}

TEST(SpawnTest, RefusesRequestsThatDoNotHangTogether) {
  const auto empty = spawn({});
  ASSERT_FALSE(empty.has_value());
  EXPECT_EQ(empty.error().code, ErrorCode::kInvalidArgument);
  EXPECT_EQ(empty.error().message, "empty argv");

  const auto loopbackHere = spawn({.argv = {"/bin/true"}, .loopback = Loopback::kUp});
  ASSERT_FALSE(loopbackHere.has_value());
  EXPECT_THAT(loopbackHere.error().message, HasSubstr("Loopback::kUp in the caller's netns"));

  const auto joinNowhere = spawn({.argv = {"/bin/true"}, .netns = SpawnNetns::kJoin});
  ASSERT_FALSE(joinNowhere.has_value());
  EXPECT_THAT(joinNowhere.error().message, HasSubstr("SpawnNetns::kJoin"));

  const auto pathWithoutJoin = spawn({.argv = {"/bin/true"}, .netnsPath = "/run/netns/x"});
  ASSERT_FALSE(pathWithoutJoin.has_value());
  EXPECT_THAT(pathWithoutJoin.error().message, HasSubstr("SpawnNetns::kJoin"));
}

}  // namespace
}  // namespace hostport::test
