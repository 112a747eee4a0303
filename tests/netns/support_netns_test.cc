// tests/support/netns.h against the real kernel: inPrivateNetns() runs its function on a thread in
// a fresh netns with lo up, leaves the caller where it was, and reports a refused unshare as an
// error instead of running the function outside a netns.

#include <gtest/gtest.h>
#include <linux/capability.h>
#include <net/if.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <string>
#include <thread>

#include "common/unique_fd.h"
#include "tests/support/netns.h"
#include "tests/support/result_assertions.h"

namespace hostport::test {
namespace {

/// The inode of the calling thread's netns: equal inodes, same netns.
ino_t threadNetns() {
  struct stat info {};
  EXPECT_EQ(::stat("/proc/thread-self/ns/net", &info), 0)
      << systemError(ErrorCode::kIo, "stat /proc/thread-self/ns/net", errno).message;
  return info.st_ino;
}

bool loopbackIsUp() {
  UniqueFd fd(::socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0));
  ifreq request{};
  std::strncpy(request.ifr_name, "lo", IFNAMSIZ - 1);
  return fd.valid() && ::ioctl(fd.get(), SIOCGIFFLAGS, &request) == 0 &&
         (request.ifr_flags & IFF_UP) != 0;
}

/// Drops CAP_SYS_ADMIN from the calling thread alone (the raw syscall, not libcap's process-wide
/// wrappers), so that threads it starts cannot unshare a netns.
bool dropSysAdminFromThisThread() {
  __user_cap_header_struct header{_LINUX_CAPABILITY_VERSION_3, 0};
  __user_cap_data_struct data[_LINUX_CAPABILITY_U32S_3] = {};
  if (::syscall(SYS_capget, &header, data) != 0) return false;
  for (auto& set : data) {
    set.effective &= ~CAP_TO_MASK(CAP_SYS_ADMIN);
    set.permitted &= ~CAP_TO_MASK(CAP_SYS_ADMIN);
  }
  return ::syscall(SYS_capset, &header, data) == 0;
}

class InPrivateNetnsTest : public ::testing::Test {
 protected:
  void SetUp() override { HOSTPORT_SKIP_UNLESS_ROOT(); }
};

TEST_F(InPrivateNetnsTest, RunsTheFunctionInAFreshNetnsWithLoUpAndLeavesTheCallerWhereItWas) {
  const ino_t caller = threadNetns();
  ino_t inside = 0;
  bool loUp = false;
  int runs = 0;
  ASSERT_OK(inPrivateNetns([&] {
    ++runs;
    inside = threadNetns();
    loUp = loopbackIsUp();
  }));
  EXPECT_EQ(runs, 1);
  EXPECT_NE(inside, 0u);
  EXPECT_NE(inside, caller);
  EXPECT_TRUE(loUp) << "127.0.0.1 and ::1 are local only with lo up";
  EXPECT_EQ(threadNetns(), caller) << "the calling thread must not move";
}

TEST_F(InPrivateNetnsTest, EachCallGetsANetnsOfItsOwn) {
  // A socket keeps its netns alive, so the second netns cannot reuse the first one's inode.
  UniqueFd keepAlive;
  ino_t first = 0;
  ino_t second = 0;
  ASSERT_OK(inPrivateNetns([&] {
    first = threadNetns();
    keepAlive = UniqueFd(::socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0));
  }));
  ASSERT_TRUE(keepAlive.valid());
  ASSERT_OK(inPrivateNetns([&] { second = threadNetns(); }));
  EXPECT_NE(first, second);
}

TEST_F(InPrivateNetnsTest, ReportsARefusedUnshareAsAnErrorAndDoesNotRunTheFunction) {
  bool ran = false;
  Result<void> entered;
  bool dropped = false;
  int dropError = 0;
  // Capabilities are per thread and inherited by the threads it starts: without CAP_SYS_ADMIN
  // here, inPrivateNetns's own thread cannot unshare.
  std::thread([&] {
    dropped = dropSysAdminFromThisThread();
    dropError = errno;  // errno is per thread: read it on the thread that called capset
    if (dropped) entered = inPrivateNetns([&] { ran = true; });
  }).join();
  ASSERT_TRUE(dropped) << systemError(ErrorCode::kIo, "capset", dropError).message;
  ASSERT_FALSE(entered.has_value()) << "unshare(CLONE_NEWNET) succeeded without CAP_SYS_ADMIN";
  EXPECT_EQ(entered.error().code, ErrorCode::kIo);
  EXPECT_EQ(entered.error().message, "unshare(CLONE_NEWNET): " + std::string(std::strerror(EPERM)));
  EXPECT_FALSE(ran);
}

}  // namespace
}  // namespace hostport::test
