// The netlink keeper (cni-plugin/netlink_keeper.h) holds the netfilter sockets plugin processes
// hand it, so none is released (and none makes the kernel flush its destroy work under the commit
// mutex) until the handing has been quiet; then it closes them, idles, and goes. Whether a socket
// still exists is read from /proc/net/netlink by its inode: a process's copy closed, the kernel
// object lives on while the keeper holds it.

#include "cni-plugin/netlink_keeper.h"

#include <gtest/gtest.h>
#include <linux/netlink.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>

#include <algorithm>
#include <chrono>
#include <cstring>
#include <fstream>
#include <future>
#include <sstream>
#include <string>
#include <thread>

#include "tests/support/temp_dir.h"
#include "tests/support/wait.h"

namespace hostport::cni {
namespace {

using namespace std::chrono_literals;

UniqueFd netlinkSocket(int protocol) {
  UniqueFd fd(socket(AF_NETLINK, SOCK_RAW | SOCK_CLOEXEC, protocol));
  EXPECT_GE(fd.get(), 0);
  sockaddr_nl local{};
  local.nl_family = AF_NETLINK;
  EXPECT_EQ(bind(fd.get(), reinterpret_cast<const sockaddr*>(&local), sizeof local), 0);
  return fd;
}

ino_t inodeOf(int fd) {
  struct stat info {};
  EXPECT_EQ(fstat(fd, &info), 0);
  return info.st_ino;
}

/// True while the kernel still has the netlink socket of `inode` (in this netns).
bool netlinkSocketExists(ino_t inode) {
  std::ifstream table("/proc/net/netlink");
  std::string line;
  std::getline(table, line);  // the header
  while (std::getline(table, line)) {
    std::istringstream fields(line);
    std::string column;
    for (int i = 0; i < 10 && fields >> column; ++i) {
    }
    if (column == std::to_string(inode)) return true;
  }
  return false;
}

class NetlinkKeeperTest : public ::testing::Test {
 protected:
  /// A keeper on its own thread; its result once it has gone.
  std::future<bool> startKeeper(KeeperTiming timing) {
    auto keeper = std::async(std::launch::async,
                             [this, timing] { return keepNetlinkSockets(dir_.path(), timing); });
    EXPECT_TRUE(test::waitUntil([&] { return listening(); })) << "the keeper never listened";
    return keeper;
  }

  /// True when something accepts connections on the keeper's socket.
  bool listening() const {
    const UniqueFd probe(socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0));
    sockaddr_un address{};
    address.sun_family = AF_UNIX;
    const std::string path = keeperSocketPath(dir_.path()).string();
    std::memcpy(address.sun_path, path.c_str(), path.size() + 1);
    return connect(probe.get(), reinterpret_cast<const sockaddr*>(&address), sizeof address) == 0;
  }

  test::TempDir dir_;
};

TEST_F(NetlinkKeeperTest, ListsOnlyTheNetfilterSocketsOfThisProcess) {
  const UniqueFd route = netlinkSocket(NETLINK_ROUTE);
  const UniqueFd netfilter = netlinkSocket(NETLINK_NETFILTER);
  const auto sockets = netfilterSockets();
  EXPECT_NE(std::ranges::find(sockets, netfilter.get()), sockets.end());
  EXPECT_EQ(std::ranges::find(sockets, route.get()), sockets.end());
}

TEST_F(NetlinkKeeperTest, HoldsWhatItIsHandedUntilTheHandingIsQuietThenClosesItAndGoes) {
  auto keeper = startKeeper({.quiet = 300ms, .idle = 300ms, .maxHold = 10s});
  std::vector<ino_t> inodes;
  for (int i = 0; i < 3; ++i) {
    UniqueFd socket = netlinkSocket(NETLINK_NETFILTER);
    inodes.push_back(inodeOf(socket.get()));
    const int fd = socket.get();
    ASSERT_TRUE(handToKeeper(dir_.path(), std::span(&fd, 1)));
  }  // our copies are closed here
  for (const ino_t inode : inodes) {
    EXPECT_TRUE(netlinkSocketExists(inode)) << "released although the keeper holds it";
  }
  EXPECT_TRUE(test::waitUntil([&] {
    return std::ranges::none_of(inodes, [](ino_t inode) { return netlinkSocketExists(inode); });
  })) << "not closed once the handing was quiet";
  ASSERT_EQ(keeper.wait_for(5s), std::future_status::ready) << "the keeper did not go when idle";
  EXPECT_TRUE(keeper.get());
  EXPECT_FALSE(std::filesystem::exists(keeperSocketPath(dir_.path())));
  EXPECT_FALSE(handToKeeper(dir_.path(), netfilterSockets())) << "handed to nobody";
}

TEST_F(NetlinkKeeperTest, OneKeeperAStaleSocketFileIsReplacedAndAStreamIsClosedAfterMaxHold) {
  // A dead keeper's socket file: nobody listens, so nothing is handed over, and the next keeper
  // takes the place.
  {
    const UniqueFd stale(socket(AF_UNIX, SOCK_STREAM, 0));
    sockaddr_un address{};
    address.sun_family = AF_UNIX;
    const std::string path = keeperSocketPath(dir_.path()).string();
    std::memcpy(address.sun_path, path.c_str(), path.size() + 1);
    ASSERT_EQ(bind(stale.get(), reinterpret_cast<const sockaddr*>(&address), sizeof address), 0);
  }
  const UniqueFd mine = netlinkSocket(NETLINK_NETFILTER);
  const int fd = mine.get();
  EXPECT_FALSE(handToKeeper(dir_.path(), std::span(&fd, 1)));

  auto keeper = startKeeper({.quiet = 500ms, .idle = 1s, .maxHold = 400ms});
  EXPECT_FALSE(keepNetlinkSockets(dir_.path())) << "a second keeper while one serves";

  // Handed every 50 ms, never quiet for 500 ms: the first is closed after maxHold anyway.
  UniqueFd first = netlinkSocket(NETLINK_NETFILTER);
  const ino_t firstInode = inodeOf(first.get());
  const int firstFd = first.get();
  ASSERT_TRUE(handToKeeper(dir_.path(), std::span(&firstFd, 1)));
  first.reset();
  const bool closedWhileStreaming = test::waitUntil(
      [&] {
        UniqueFd next = netlinkSocket(NETLINK_NETFILTER);
        const int nextFd = next.get();
        EXPECT_TRUE(handToKeeper(dir_.path(), std::span(&nextFd, 1)));
        std::this_thread::sleep_for(50ms);
        return !netlinkSocketExists(firstInode);
      },
      3s);
  EXPECT_TRUE(closedWhileStreaming) << "a stream that never pauses held its sockets forever";
  ASSERT_EQ(keeper.wait_for(5s), std::future_status::ready);
  EXPECT_TRUE(keeper.get());
}

}  // namespace
}  // namespace hostport::cni
