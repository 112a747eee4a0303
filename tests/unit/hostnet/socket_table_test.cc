#include "hostnet/socket_table.h"

#include <gtest/gtest.h>
#include <netinet/in.h>

#include <vector>

namespace hostport::hostnet {
namespace {

BoundSocket socketOf(uint8_t protocol, Family family, uint16_t port, uint32_t inode,
                     uint8_t lastAddressByte = 0) {
  BoundSocket socket;
  socket.family = family;
  socket.protocol = protocol;
  socket.state = protocol == IPPROTO_TCP ? kTcpListen : kTcpClose;
  socket.port = port;
  socket.inode = inode;
  if (family == Family::kIPv4) {
    socket.address[3] = lastAddressByte;
  } else {
    socket.address[15] = lastAddressByte;
  }
  return socket;
}

TEST(SocketTableTest, FindsPortsOfEveryCoveredProtocolOnAnyAddressAndFamily) {
  const auto table = SocketTable::fromSockets({
      socketOf(IPPROTO_TCP, Family::kIPv4, 8080, 11, 1),  // 0.0.0.1 stands for "some address"
      socketOf(IPPROTO_TCP, Family::kIPv6, 9090, 12),
      socketOf(IPPROTO_UDP, Family::kIPv4, 5353, 13),
      socketOf(IPPROTO_SCTP, Family::kIPv6, 3868, 14),
  });
  EXPECT_EQ(table.size(), 4u);
  EXPECT_TRUE(table.isBound(IPPROTO_TCP, 8080));
  EXPECT_TRUE(table.isBound(IPPROTO_TCP, 9090));
  EXPECT_TRUE(table.isBound(IPPROTO_UDP, 5353));
  EXPECT_TRUE(table.isBound(IPPROTO_SCTP, 3868));
  EXPECT_EQ(table.inodeOf(IPPROTO_TCP, 8080), 11u);
  EXPECT_EQ(table.inodeOf(IPPROTO_TCP, 9090), 12u);
  EXPECT_EQ(table.inodeOf(IPPROTO_UDP, 5353), 13u);
  EXPECT_EQ(table.inodeOf(IPPROTO_SCTP, 3868), 14u);
}

TEST(SocketTableTest, KeepsProtocolsApart) {
  const auto table = SocketTable::fromSockets({socketOf(IPPROTO_TCP, Family::kIPv4, 7000, 1),
                                               socketOf(IPPROTO_UDP, Family::kIPv6, 7001, 2)});
  EXPECT_FALSE(table.isBound(IPPROTO_UDP, 7000));
  EXPECT_FALSE(table.isBound(IPPROTO_SCTP, 7000));
  EXPECT_FALSE(table.isBound(IPPROTO_TCP, 7001));
  EXPECT_FALSE(table.inodeOf(IPPROTO_UDP, 7000).has_value());
  EXPECT_EQ(table.find(IPPROTO_TCP, 7001), nullptr);
}

TEST(SocketTableTest, UnboundNeighboursAndWordEdgesStayFree) {
  const auto table = SocketTable::fromSockets({socketOf(IPPROTO_TCP, Family::kIPv4, 63, 1),
                                               socketOf(IPPROTO_TCP, Family::kIPv4, 64, 2),
                                               socketOf(IPPROTO_TCP, Family::kIPv4, 65535, 3)});
  EXPECT_TRUE(table.isBound(IPPROTO_TCP, 63));
  EXPECT_TRUE(table.isBound(IPPROTO_TCP, 64));
  EXPECT_TRUE(table.isBound(IPPROTO_TCP, 65535));
  EXPECT_FALSE(table.isBound(IPPROTO_TCP, 62));
  EXPECT_FALSE(table.isBound(IPPROTO_TCP, 65));
  EXPECT_FALSE(table.isBound(IPPROTO_TCP, 65534));
  EXPECT_FALSE(table.isBound(IPPROTO_TCP, 0));
  int bound = 0;
  for (uint32_t port = 0; port <= 65535; ++port) {
    bound += table.isBound(IPPROTO_TCP, static_cast<uint16_t>(port)) ? 1 : 0;
  }
  EXPECT_EQ(bound, 3);
}

TEST(SocketTableTest, IgnoresPortZeroAndUncoveredProtocols) {
  const auto table = SocketTable::fromSockets(
      {socketOf(IPPROTO_UDP, Family::kIPv4, 0, 1), socketOf(IPPROTO_ICMP, Family::kIPv4, 80, 2)});
  EXPECT_EQ(table.size(), 2u) << "kept in sockets(), but not bound";
  EXPECT_FALSE(table.isBound(IPPROTO_UDP, 0));
  EXPECT_FALSE(table.isBound(IPPROTO_ICMP, 80));
  EXPECT_FALSE(table.inodeOf(IPPROTO_ICMP, 80).has_value());
}

TEST(SocketTableTest, PrefersASocketWithAFileToNameTheHolder) {
  // A kernel UDP tunnel (inode 0) and a process on the same port with SO_REUSEPORT: only the
  // process can be named in an error.
  const auto table = SocketTable::fromSockets({socketOf(IPPROTO_UDP, Family::kIPv4, 4789, 0),
                                               socketOf(IPPROTO_UDP, Family::kIPv6, 4789, 55),
                                               socketOf(IPPROTO_UDP, Family::kIPv4, 4789, 66)});
  EXPECT_EQ(table.inodeOf(IPPROTO_UDP, 4789), 55u) << "the first socket with a file";
  const BoundSocket* holder = table.find(IPPROTO_UDP, 4789);
  ASSERT_NE(holder, nullptr);
  EXPECT_EQ(holder->family, Family::kIPv6);
}

TEST(SocketTableTest, KernelOnlySocketIsBoundWithInodeZero) {
  const auto table = SocketTable::fromSockets({socketOf(IPPROTO_UDP, Family::kIPv4, 51820, 0)});
  EXPECT_TRUE(table.isBound(IPPROTO_UDP, 51820));
  EXPECT_EQ(table.inodeOf(IPPROTO_UDP, 51820), 0u);
}

TEST(SocketTableTest, EmptyTableHasNothingBound) {
  const auto table = SocketTable::fromSockets({});
  EXPECT_EQ(table.size(), 0u);
  EXPECT_FALSE(table.isBound(IPPROTO_TCP, 80));
  EXPECT_FALSE(table.inodeOf(IPPROTO_UDP, 53).has_value());
}

TEST(SocketTableTest, MovedTableKeepsItsAnswers) {
  auto table = SocketTable::fromSockets({socketOf(IPPROTO_TCP, Family::kIPv4, 443, 9)});
  const SocketTable moved = std::move(table);
  EXPECT_TRUE(moved.isBound(IPPROTO_TCP, 443));
  EXPECT_EQ(moved.inodeOf(IPPROTO_TCP, 443), 9u);
  ASSERT_NE(moved.find(IPPROTO_TCP, 443), nullptr);
  EXPECT_EQ(moved.find(IPPROTO_TCP, 443)->describe(), "tcp 0.0.0.0:443 (inode 9, uid 0)");
}

}  // namespace
}  // namespace hostport::hostnet
