#include "tests/support/temp_dir.h"

#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <filesystem>
#include <string>

namespace hostport::test {
namespace {

/// The pid of a child that has exited and been reaped: no process has it (until reused).
pid_t goneProcess() {
  const pid_t pid = ::fork();
  if (pid == 0) ::_exit(0);
  int status = 0;
  ::waitpid(pid, &status, 0);
  return pid;
}

TEST(IsLeftByAGoneProcessTest, IsTrueForTheNameOfAProcessThatIsGone) {
  const pid_t gone = goneProcess();
  ASSERT_GT(gone, 0);
  EXPECT_TRUE(isLeftByAGoneProcess("hpt-" + std::to_string(gone) + "-abc123"));
}

TEST(IsLeftByAGoneProcessTest, IsTrueForThisProcessItself) {
  EXPECT_TRUE(isLeftByAGoneProcess("hpt-" + std::to_string(::getpid()) + "-abc123"));
}

TEST(IsLeftByAGoneProcessTest, IsFalseForALiveProcess) {
  EXPECT_FALSE(isLeftByAGoneProcess("hpt-" + std::to_string(::getppid()) + "-abc123"));
  EXPECT_FALSE(isLeftByAGoneProcess("hpt-1-abc123")) << "init is always there";
}

TEST(IsLeftByAGoneProcessTest, IsFalseForNamesThatAreNotTheSuites) {
  const std::string self = std::to_string(::getpid());
  EXPECT_FALSE(isLeftByAGoneProcess(""));
  EXPECT_FALSE(isLeftByAGoneProcess("hpt-"));
  EXPECT_FALSE(isLeftByAGoneProcess("hpt-" + self)) << "no dash after the pid";
  EXPECT_FALSE(isLeftByAGoneProcess("hpt--abc")) << "no pid";
  EXPECT_FALSE(isLeftByAGoneProcess("hpt-12a4-abc")) << "a pid of digits only";
  EXPECT_FALSE(isLeftByAGoneProcess("hpt-1234567890-abc")) << "more digits than a pid has";
  EXPECT_FALSE(isLeftByAGoneProcess("tmp-" + self + "-abc")) << "another prefix";
  EXPECT_FALSE(isLeftByAGoneProcess("HPT-" + self + "-abc")) << "the prefix is case-sensitive";
  EXPECT_FALSE(isLeftByAGoneProcess("xhpt-" + self + "-abc"));
}

TEST(TempDirTest, MakesAnEmptyDirectoryNamedForThisProcessAndRemovesItWithItsContents) {
  std::string path;
  {
    const TempDir dir;
    path = dir.path();
    ASSERT_FALSE(path.empty());
    EXPECT_TRUE(std::filesystem::is_directory(path));
    EXPECT_TRUE(std::filesystem::is_empty(path));
    EXPECT_TRUE(std::filesystem::path(path).filename().string().starts_with(
        "hpt-" + std::to_string(::getpid()) + "-"));
    std::filesystem::create_directories(dir / "a" / "b");
    EXPECT_EQ((dir / "a").string(), path + "/a");
  }
  EXPECT_FALSE(std::filesystem::exists(path));
}

TEST(TempDirTest, GivesEachInstanceItsOwnDirectory) {
  const TempDir first;
  auto second = TempDir::create();
  ASSERT_TRUE(second.has_value()) << second.error().message;
  EXPECT_NE(first.path(), second->path());
}

TEST(TempDirTest, HandsItsDirectoryOverWhenMoved) {
  TempDir from;
  const std::string path = from.path();
  {
    const TempDir to(std::move(from));
    EXPECT_EQ(to.path(), path);
    EXPECT_TRUE(from.path().empty());  // NOLINT(bugprone-use-after-move): the moved-from state
  }
  EXPECT_FALSE(std::filesystem::exists(path)) << "removed by the one that owned it last";
}

}  // namespace
}  // namespace hostport::test
