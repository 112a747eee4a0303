// NetlinkSocket's listener side (joinGroup, setReceiveBuffer, receive) on real sockets. None of
// this needs root: NETLINK_ROUTE's link group is open to everyone, and the kernel acknowledges a
// NOOP from anyone.

#include "netlink/socket.h"

#include <gtest/gtest.h>
#include <linux/netlink.h>
#include <linux/rtnetlink.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstring>
#include <system_error>
#include <vector>

#include "netlink/attributes.h"
#include "tests/unit/netlink/netlink_test_bytes.h"

namespace hostport::netlink {
namespace {

using namespace std::chrono_literals;
using Clock = std::chrono::steady_clock;

class NetlinkSocketTest : public ::testing::Test {
 protected:
  static NetlinkSocket routeSocket() {
    auto socket = NetlinkSocket::open(NETLINK_ROUTE);
    EXPECT_TRUE(socket) << socket.error().message;
    return std::move(*socket);
  }

  /// Sends `bytes` from `from` to the netlink port `portId` (0: the kernel).
  static void sendTo(const NetlinkSocket& from, const test::ByteVector& bytes, uint32_t portId) {
    sockaddr_nl to{};
    to.nl_family = AF_NETLINK;
    to.nl_pid = portId;
    ASSERT_EQ(::sendto(from.fd(), bytes.data(), bytes.size(), 0, reinterpret_cast<sockaddr*>(&to),
                       sizeof(to)),
              static_cast<ssize_t>(bytes.size()))
        << std::strerror(errno);
  }

  /// A NOOP that asks for an ACK: the kernel answers it on any bus, with no privilege.
  static test::ByteVector noopAskingForAck() {
    return test::message(NLMSG_NOOP, NLM_F_REQUEST | NLM_F_ACK, test::ByteVector{});
  }
};

TEST_F(NetlinkSocketTest, ReceiveReturnsNothingWhenNoMessageComesInTime) {
  auto socket = routeSocket();
  std::vector<std::byte> buffer(4096);
  const auto started = Clock::now();
  auto received = socket.receive(buffer, 50ms);
  ASSERT_TRUE(received) << received.error().message;
  EXPECT_FALSE(received->has_value());
  EXPECT_GE(Clock::now() - started, 50ms);
  EXPECT_LT(Clock::now() - started, 2s);
}

TEST_F(NetlinkSocketTest, ReceiveReadsWhatTheKernelSent) {
  auto socket = routeSocket();
  ASSERT_NO_FATAL_FAILURE(sendTo(socket, noopAskingForAck(), 0));
  std::vector<std::byte> buffer(4096);
  auto received = socket.receive(buffer, 2s);
  ASSERT_TRUE(received) << received.error().message;
  ASSERT_TRUE(received->has_value());
  const auto header = readStruct<nlmsghdr>(**received);
  ASSERT_TRUE(header);
  EXPECT_EQ(header->nlmsg_type, NLMSG_ERROR);
  EXPECT_EQ(header->nlmsg_len, (*received)->size());
  const auto ack = readStruct<nlmsgerr>((*received)->subspan(NLMSG_HDRLEN));
  ASSERT_TRUE(ack);
  EXPECT_EQ(ack->error, 0);
}

TEST_F(NetlinkSocketTest, ReceiveDropsDatagramsThatDoNotComeFromTheKernel) {
  auto socket = routeSocket();
  auto other = routeSocket();
  ASSERT_NO_FATAL_FAILURE(sendTo(other, noopAskingForAck(), socket.portId()));
  std::vector<std::byte> buffer(4096);
  auto received = socket.receive(buffer, 100ms);
  ASSERT_TRUE(received) << received.error().message;
  EXPECT_FALSE(received->has_value()) << "a local process's datagram was taken as the kernel's";

  ASSERT_NO_FATAL_FAILURE(sendTo(socket, noopAskingForAck(), 0));
  received = socket.receive(buffer, 2s);
  ASSERT_TRUE(received) << received.error().message;
  EXPECT_TRUE(received->has_value()) << "the socket stopped receiving";
}

TEST_F(NetlinkSocketTest, ReceiveRefusesADatagramLargerThanTheBuffer) {
  auto socket = routeSocket();
  ASSERT_NO_FATAL_FAILURE(sendTo(socket, noopAskingForAck(), 0));
  std::vector<std::byte> small(8);
  auto received = socket.receive(small, 2s);
  ASSERT_FALSE(received);
  EXPECT_EQ(received.error().cause, std::errc::no_space_on_device) << received.error().message;
}

TEST_F(NetlinkSocketTest, JoinGroupAddsTheMembershipAndRefusesAGroupTheBusLacks) {
  auto socket = routeSocket();
  ASSERT_TRUE(socket.joinGroup(RTNLGRP_LINK));
  uint32_t groups[4] = {};
  socklen_t length = sizeof(groups);
  ASSERT_EQ(::getsockopt(socket.fd(), SOL_NETLINK, NETLINK_LIST_MEMBERSHIPS, groups, &length), 0);
  EXPECT_TRUE(groups[(RTNLGRP_LINK - 1) / 32] & (1u << ((RTNLGRP_LINK - 1) % 32)));

  auto refused = socket.joinGroup(100000);
  ASSERT_FALSE(refused);
  EXPECT_TRUE(refused.error().cause) << refused.error().message;
}

TEST_F(NetlinkSocketTest, SetReceiveBufferGrowsTheBuffer) {
  auto socket = routeSocket();
  int before = 0;
  socklen_t length = sizeof(before);
  ASSERT_EQ(::getsockopt(socket.fd(), SOL_SOCKET, SO_RCVBUF, &before, &length), 0);
  const int wanted = before * 4;
  ASSERT_TRUE(socket.setReceiveBuffer(wanted));
  int after = 0;
  ASSERT_EQ(::getsockopt(socket.fd(), SOL_SOCKET, SO_RCVBUF, &after, &length), 0);
  if (::geteuid() == 0) {
    EXPECT_GE(after, wanted);  // SO_RCVBUFFORCE: past rmem_max
  } else {
    EXPECT_GE(after, before);  // capped at net.core.rmem_max
  }
}

}  // namespace
}  // namespace hostport::netlink
