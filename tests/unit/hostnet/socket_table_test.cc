#include "hostnet/socket_table.h"

#include <gtest/gtest.h>
#include <netinet/in.h>

#include <vector>

namespace hostport::hostnet {
namespace {

BoundSocket socketOf(Protocol protocol, Family family, uint16_t port, uint32_t inode,
                     uint8_t lastAddressByte = 0) {
  BoundSocket socket;
  socket.protocol = protocol;
  socket.state = protocol == Protocol::kTcp ? kTcpListen : kTcpClose;
  socket.port = port;
  socket.inode = inode;
  std::vector<uint8_t> address(addressSize(family), 0);
  address.back() = lastAddressByte;
  socket.address = *IpAddress::fromBytes(family, address);
  return socket;
}

TEST(SocketTableTest, FindsPortsOfEveryCoveredProtocolOnAnyAddressAndFamily) {
  const auto table = SocketTable::fromSockets({
      socketOf(Protocol::kTcp, Family::kIPv4, 8080, 11, 1),  // 0.0.0.1 stands for "some address"
      socketOf(Protocol::kTcp, Family::kIPv6, 9090, 12),
      socketOf(Protocol::kUdp, Family::kIPv4, 5353, 13),
      socketOf(Protocol::kSctp, Family::kIPv6, 3868, 14),
  });
  EXPECT_EQ(table.size(), 4u);
  EXPECT_TRUE(table.isBound(Protocol::kTcp, 8080));
  EXPECT_TRUE(table.isBound(Protocol::kTcp, 9090));
  EXPECT_TRUE(table.isBound(Protocol::kUdp, 5353));
  EXPECT_TRUE(table.isBound(Protocol::kSctp, 3868));
  EXPECT_EQ(table.inodeOf(Protocol::kTcp, 8080), 11u);
  EXPECT_EQ(table.inodeOf(Protocol::kTcp, 9090), 12u);
  EXPECT_EQ(table.inodeOf(Protocol::kUdp, 5353), 13u);
  EXPECT_EQ(table.inodeOf(Protocol::kSctp, 3868), 14u);
}

TEST(SocketTableTest, KeepsProtocolsApart) {
  const auto table = SocketTable::fromSockets({socketOf(Protocol::kTcp, Family::kIPv4, 7000, 1),
                                               socketOf(Protocol::kUdp, Family::kIPv6, 7001, 2)});
  EXPECT_FALSE(table.isBound(Protocol::kUdp, 7000));
  EXPECT_FALSE(table.isBound(Protocol::kSctp, 7000));
  EXPECT_FALSE(table.isBound(Protocol::kTcp, 7001));
  EXPECT_FALSE(table.inodeOf(Protocol::kUdp, 7000).has_value());
  EXPECT_EQ(table.find(Protocol::kTcp, 7001), nullptr);
}

TEST(SocketTableTest, UnboundNeighboursAndWordEdgesStayFree) {
  const auto table = SocketTable::fromSockets({socketOf(Protocol::kTcp, Family::kIPv4, 63, 1),
                                               socketOf(Protocol::kTcp, Family::kIPv4, 64, 2),
                                               socketOf(Protocol::kTcp, Family::kIPv4, 65535, 3)});
  EXPECT_TRUE(table.isBound(Protocol::kTcp, 63));
  EXPECT_TRUE(table.isBound(Protocol::kTcp, 64));
  EXPECT_TRUE(table.isBound(Protocol::kTcp, 65535));
  EXPECT_FALSE(table.isBound(Protocol::kTcp, 62));
  EXPECT_FALSE(table.isBound(Protocol::kTcp, 65));
  EXPECT_FALSE(table.isBound(Protocol::kTcp, 65534));
  EXPECT_FALSE(table.isBound(Protocol::kTcp, 0));
  int bound = 0;
  for (uint32_t port = 0; port <= 65535; ++port) {
    bound += table.isBound(Protocol::kTcp, static_cast<uint16_t>(port)) ? 1 : 0;
  }
  EXPECT_EQ(bound, 3);
}

// A socket of a protocol without ports (ICMP) cannot be held: BoundSocket's Protocol has no
// value for it.
TEST(SocketTableTest, IgnoresPortZero) {
  const auto table = SocketTable::fromSockets({socketOf(Protocol::kUdp, Family::kIPv4, 0, 1),
                                               socketOf(Protocol::kTcp, Family::kIPv4, 0, 2)});
  EXPECT_EQ(table.size(), 2u) << "kept in sockets(), but not bound";
  EXPECT_FALSE(table.isBound(Protocol::kUdp, 0));
  EXPECT_FALSE(table.isBound(Protocol::kTcp, 0));
  EXPECT_FALSE(table.inodeOf(Protocol::kTcp, 0).has_value());
}

TEST(SocketTableTest, PrefersASocketWithAFileToNameTheHolder) {
  // A kernel UDP tunnel (inode 0) and a process on the same port with SO_REUSEPORT: only the
  // process can be named in an error.
  const auto table = SocketTable::fromSockets({socketOf(Protocol::kUdp, Family::kIPv4, 4789, 0),
                                               socketOf(Protocol::kUdp, Family::kIPv6, 4789, 55),
                                               socketOf(Protocol::kUdp, Family::kIPv4, 4789, 66)});
  EXPECT_EQ(table.inodeOf(Protocol::kUdp, 4789), 55u) << "the first socket with a file";
  const BoundSocket* holder = table.find(Protocol::kUdp, 4789);
  ASSERT_NE(holder, nullptr);
  EXPECT_EQ(holder->family(), Family::kIPv6);
}

TEST(SocketTableTest, KernelOnlySocketIsBoundWithInodeZero) {
  const auto table = SocketTable::fromSockets({socketOf(Protocol::kUdp, Family::kIPv4, 51820, 0)});
  EXPECT_TRUE(table.isBound(Protocol::kUdp, 51820));
  EXPECT_EQ(table.inodeOf(Protocol::kUdp, 51820), 0u);
}

TEST(SocketTableTest, EmptyTableHasNothingBound) {
  const auto table = SocketTable::fromSockets({});
  EXPECT_EQ(table.size(), 0u);
  EXPECT_FALSE(table.isBound(Protocol::kTcp, 80));
  EXPECT_FALSE(table.inodeOf(Protocol::kUdp, 53).has_value());
}

TEST(SocketTableTest, MovedTableKeepsItsAnswers) {
  auto table = SocketTable::fromSockets({socketOf(Protocol::kTcp, Family::kIPv4, 443, 9)});
  const SocketTable moved = std::move(table);
  EXPECT_TRUE(moved.isBound(Protocol::kTcp, 443));
  EXPECT_EQ(moved.inodeOf(Protocol::kTcp, 443), 9u);
  ASSERT_NE(moved.find(Protocol::kTcp, 443), nullptr);
  EXPECT_EQ(moved.find(Protocol::kTcp, 443)->describe(), "tcp 0.0.0.0:443 (inode 9, uid 0)");
}

}  // namespace
}  // namespace hostport::hostnet
