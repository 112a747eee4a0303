#include "tests/support/sockets.h"

#include <gtest/gtest.h>
#include <sys/socket.h>

#include <string>

#include "tests/support/result_assertions.h"

namespace hostport::test {
namespace {

int socketType(int fd) {
  int type = 0;
  socklen_t length = sizeof type;
  return ::getsockopt(fd, SOL_SOCKET, SO_TYPE, &type, &length) == 0 ? type : -1;
}

bool isListening(int fd) {
  int listening = 0;
  socklen_t length = sizeof listening;
  return ::getsockopt(fd, SOL_SOCKET, SO_ACCEPTCONN, &listening, &length) == 0 && listening != 0;
}

TEST(SocketsTest, BindsATcpListenerOnAPortTheKernelChooses) {
  ASSERT_OK_AND_ASSIGN(const UniqueFd fd, bindSocket(Protocol::kTcp, "127.0.0.1", 0));
  EXPECT_NE(boundPort(fd.get()), 0);
  EXPECT_EQ(socketType(fd.get()), SOCK_STREAM);
  EXPECT_TRUE(isListening(fd.get()));
}

TEST(SocketsTest, LeavesATcpSocketBoundOnlyWhenAsked) {
  ASSERT_OK_AND_ASSIGN(const UniqueFd fd,
                       bindSocket(Protocol::kTcp, "127.0.0.1", 0, {.listen = false}));
  EXPECT_NE(boundPort(fd.get()), 0);
  EXPECT_FALSE(isListening(fd.get()));
}

TEST(SocketsTest, BindsUdpOnIpv6) {
  ASSERT_OK_AND_ASSIGN(const UniqueFd fd, bindSocket(Protocol::kUdp, "::1", 0));
  EXPECT_NE(boundPort(fd.get()), 0);
  EXPECT_EQ(socketType(fd.get()), SOCK_DGRAM);
}

TEST(SocketsTest, ReportsAPortThatIsTakenWithItsErrno) {
  ASSERT_OK_AND_ASSIGN(const UniqueFd first, bindSocket(Protocol::kTcp, "127.0.0.1", 0));
  const uint16_t port = boundPort(first.get());
  const auto second = bindSocket(Protocol::kTcp, "127.0.0.1", port);
  ASSERT_FALSE(second.has_value());
  EXPECT_EQ(second.error().message,
            "bind 127.0.0.1:" + std::to_string(port) + ": Address already in use");
  EXPECT_EQ(second.error().cause, std::errc::address_in_use);
}

TEST(SocketsTest, RefusesSomethingThatIsNotAnIpAddress) {
  const auto fd = bindSocket(Protocol::kTcp, "localhost", 0);
  ASSERT_FALSE(fd.has_value());
  EXPECT_EQ(fd.error().code, ErrorCode::kInvalidArgument);
  EXPECT_EQ(fd.error().message, "not an IP address: localhost");
}

TEST(SocketsTest, OwnCommIsTheNameOfThisTestBinary) { EXPECT_EQ(ownComm(), "sockets_test"); }

}  // namespace
}  // namespace hostport::test
