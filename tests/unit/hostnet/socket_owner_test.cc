#include "hostnet/socket_owner.h"

#include <gtest/gtest.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <string>

#include "common/unique_fd.h"
#include "tests/support/temp_dir.h"

namespace hostport::hostnet {
namespace {

namespace fs = std::filesystem;

/// A fake /proc in a temporary directory: <pid>/fd/<n> symlinks and <pid>/comm files.
class FakeProc {
 public:
  FakeProc() = default;
  FakeProc(const FakeProc&) = delete;
  FakeProc& operator=(const FakeProc&) = delete;

  void addFd(const std::string& pid, int fd, const std::string& target) {
    fs::create_directories(dir_ / pid / "fd");
    fs::create_symlink(target, dir_ / pid / "fd" / std::to_string(fd));
  }
  void setComm(const std::string& pid, const std::string& comm) {
    fs::create_directories(dir_ / pid);
    std::ofstream(dir_ / pid / "comm") << comm;
  }
  OwnerSearchOptions options(size_t maxDescriptors = 1000) const {
    return OwnerSearchOptions{dir_.path(), maxDescriptors};
  }
  const std::string& root() const { return dir_.path(); }

 private:
  test::TempDir dir_;
};

TEST(SocketOwnerTest, FindsTheProcessHoldingTheSocket) {
  FakeProc proc;
  ASSERT_FALSE(proc.root().empty());
  proc.addFd("45", 0, "/dev/null");
  proc.addFd("45", 3, "socket:[1000]");
  proc.setComm("45", "sshd\n");
  proc.addFd("123", 0, "pipe:[999]");
  proc.addFd("123", 7, "socket:[999]");
  proc.setComm("123", "nginx\n");
  auto owner = findSocketOwner(999, proc.options());
  ASSERT_TRUE(owner) << owner.error().message;
  ASSERT_TRUE(owner->has_value());
  EXPECT_EQ(**owner, (ProcessRef{123, "nginx"}));
}

TEST(SocketOwnerTest, MatchesTheWholeInodeOnly) {
  FakeProc proc;
  proc.addFd("10", 3, "socket:[9999]");
  proc.addFd("11", 3, "socket:[99]");
  proc.addFd("12", 3, "anon_inode:[999]");
  proc.addFd("13", 3, "/tmp/socket:[999]");
  proc.setComm("10", "a\n");
  auto owner = findSocketOwner(999, proc.options());
  ASSERT_TRUE(owner) << owner.error().message;
  EXPECT_FALSE(owner->has_value());
}

TEST(SocketOwnerTest, SkipsEntriesThatAreNotProcesses) {
  FakeProc proc;
  proc.addFd("self", 3, "socket:[5]");                   // not a pid
  proc.addFd("12ab", 3, "socket:[5]");                   // not a pid
  proc.addFd("0", 3, "socket:[5]");                      // pid 0 does not exist
  fs::create_directories(fs::path(proc.root()) / "77");  // a process whose fd dir is gone
  auto owner = findSocketOwner(5, proc.options());
  ASSERT_TRUE(owner) << owner.error().message;
  EXPECT_FALSE(owner->has_value());
}

TEST(SocketOwnerTest, SanitisesTheCommandNameAndToleratesAMissingOne) {
  FakeProc proc;
  proc.addFd("20", 4, "socket:[31]");
  proc.setComm("20", "evil\x1b[31m\n");
  auto owner = findSocketOwner(31, proc.options());
  ASSERT_TRUE(owner && owner->has_value());
  EXPECT_EQ((*owner)->command, "evil?[31m");

  FakeProc noComm;
  noComm.addFd("21", 4, "socket:[32]");  // the process dir still exists: it is alive
  auto unnamed = findSocketOwner(32, noComm.options());
  ASSERT_TRUE(unnamed && unnamed->has_value());
  EXPECT_EQ(**unnamed, (ProcessRef{21, ""}));
}

TEST(SocketOwnerTest, InodeZeroIsAKernelSocketWithoutOwner) {
  FakeProc proc;
  proc.addFd("20", 4, "socket:[0]");
  auto owner = findSocketOwner(0, proc.options());
  ASSERT_TRUE(owner);
  EXPECT_FALSE(owner->has_value());
}

TEST(SocketOwnerTest, GivesUpAfterTheDescriptorBound) {
  FakeProc proc;
  for (int fd = 0; fd < 10; ++fd) proc.addFd("30", fd, "/dev/null");
  proc.addFd("31", 0, "socket:[42]");
  const auto owner = findSocketOwner(42, proc.options(5));
  ASSERT_FALSE(owner);
  EXPECT_EQ(owner.error().code, ErrorCode::kUnavailable);
  EXPECT_TRUE(findSocketOwner(42, proc.options(11)));
}

TEST(SocketOwnerTest, MissingProcRootIsAnIoError) {
  const auto owner = findSocketOwner(1, OwnerSearchOptions{"/nonexistent/hostport-proc", 10});
  ASSERT_FALSE(owner);
  EXPECT_EQ(owner.error().code, ErrorCode::kIo);
  EXPECT_NE(owner.error().message.find("/nonexistent/hostport-proc"), std::string::npos);
}

TEST(SocketOwnerTest, FindsThisProcessInTheRealProc) {
  // No root needed: a process may always read its own /proc/<pid>/fd.
  UniqueFd socket(::socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0));
  ASSERT_TRUE(socket.valid());
  struct stat info {};
  ASSERT_EQ(fstat(socket.get(), &info), 0);
  auto owner = findSocketOwner(static_cast<uint32_t>(info.st_ino));
  ASSERT_TRUE(owner) << owner.error().message;
  ASSERT_TRUE(owner->has_value());
  EXPECT_EQ((*owner)->pid, static_cast<uint32_t>(getpid()));
  std::string comm;
  std::getline(std::ifstream("/proc/self/comm"), comm);
  EXPECT_EQ((*owner)->command, comm);
}

}  // namespace
}  // namespace hostport::hostnet
