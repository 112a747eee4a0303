#include "hostnet/sock_diag_message.h"

#include <gtest/gtest.h>
#include <linux/inet_diag.h>
#include <linux/netlink.h>
#include <linux/sock_diag.h>
#include <netinet/in.h>
#include <sys/socket.h>

#include <cstring>
#include <random>
#include <vector>

#include "tests/unit/netlink/netlink_test_bytes.h"

namespace hostport::hostnet {
namespace {

using test::append;
using test::attr;
using test::bytesOf;
using test::ByteVector;
using test::hostBytes;
using test::message;

// inet_diag_msg is laid out below by byte offsets from the ABI instead of through the struct, so
// a mistake in the library's view of the layout cannot hide in both places.

struct DiagFields {
  int family = AF_INET;
  int state = kTcpListen;
  ByteVector src = bytesOf({127, 0, 0, 1});  // 4 or 16 bytes
  uint16_t sport = 8080;
  uint32_t uid = 1000;
  uint32_t inode = 424242;
};

/// The 72 bytes of an inet_diag_msg.
ByteVector diagMsg(const DiagFields& f) {
  ByteVector out = bytesOf({f.family, f.state, 0 /* timer */, 0 /* retrans */});
  append(out, bytesOf({f.sport >> 8, f.sport & 0xff}));  // idiag_sport, network order
  append(out, bytesOf({0, 0}));                          // idiag_dport
  ByteVector src = f.src;
  src.resize(16);
  append(out, src);                            // idiag_src
  append(out, ByteVector(16));                 // idiag_dst
  append(out, hostBytes<uint32_t>(1));         // idiag_if
  append(out, hostBytes<uint32_t>(0xc0ffee));  // idiag_cookie[0]
  append(out, hostBytes<uint32_t>(0));         // idiag_cookie[1]
  append(out, hostBytes<uint32_t>(0));         // idiag_expires
  append(out, hostBytes<uint32_t>(0));         // idiag_rqueue
  append(out, hostBytes<uint32_t>(128));       // idiag_wqueue
  append(out, hostBytes<uint32_t>(f.uid));     // idiag_uid
  append(out, hostBytes<uint32_t>(f.inode));   // idiag_inode
  return out;
}

/// What a 6.x kernel sends for one IPv4 TCP listener with no extensions asked: the message plus
/// the attributes it always adds (shutdown, cgroup id, sockopt).
ByteVector kernelTcpV4Listener() {
  ByteVector body = diagMsg({});
  append(body, attr(INET_DIAG_SHUTDOWN, bytesOf({0})));
  append(body, attr(INET_DIAG_CGROUP_ID, hostBytes<uint64_t>(1234)));
  append(body, attr(INET_DIAG_SOCKOPT, bytesOf({0, 0})));
  return message(SOCK_DIAG_BY_FAMILY, NLM_F_MULTI, body);
}

ByteVector kernelUdpV6Socket() {
  DiagFields f;
  f.family = AF_INET6;
  f.state = kTcpClose;
  f.src = bytesOf({0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1});
  f.sport = 5353;
  f.uid = 0;
  f.inode = 77;
  ByteVector body = diagMsg(f);
  append(body, attr(INET_DIAG_SHUTDOWN, bytesOf({0})));
  append(body, attr(INET_DIAG_SKV6ONLY, bytesOf({1})));
  return message(SOCK_DIAG_BY_FAMILY, NLM_F_MULTI, body);
}

// --- Requests

TEST(SockDiagMessageTest, TcpDumpRequestMatchesGoldenBytes) {
  // Written out by hand from the sock_diag ABI (x86-64, little-endian host fields).
  ByteVector expected = bytesOf({
      0x48, 0x00, 0x00, 0x00,  // nlmsg_len 72
      0x14, 0x00,              // SOCK_DIAG_BY_FAMILY
      0x01, 0x03,              // NLM_F_REQUEST | NLM_F_DUMP
      0x00, 0x00, 0x00, 0x00,  // seq (set by the socket)
      0x00, 0x00, 0x00, 0x00,  // pid
      0x02, 0x06, 0x00, 0x00,  // AF_INET, IPPROTO_TCP, no extensions, pad
      0x00, 0x04, 0x00, 0x00,  // states: LISTEN (1 << 10)
  });
  expected.resize(72);  // inet_diag_sockid: all zero, no filter
  EXPECT_EQ(buildSockDiagDump(Family::kIPv4, Protocol::kTcp, boundStateMask(Protocol::kTcp)),
            expected);

  expected[21] = std::byte{0x24};  // opt-in: LISTEN | BOUND_INACTIVE (1 << 13)
  EXPECT_EQ(buildSockDiagDump(Family::kIPv4, Protocol::kTcp, boundStateMask(Protocol::kTcp, true)),
            expected);
}

TEST(SockDiagMessageTest, UdpDumpRequestAsksForEveryStateOfItsFamily) {
  ByteVector expected = bytesOf({
      0x48, 0x00, 0x00, 0x00, 0x14, 0x00, 0x01, 0x03,  // len 72, SOCK_DIAG_BY_FAMILY, dump
      0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00,  // seq, pid
      0x0a, 0x11, 0x00, 0x00,                          // AF_INET6, IPPROTO_UDP, no extensions
      0xff, 0xff, 0xff, 0xff,                          // every state
  });
  expected.resize(72);
  EXPECT_EQ(buildSockDiagDump(Family::kIPv6, Protocol::kUdp, boundStateMask(Protocol::kUdp)),
            expected);
}

TEST(SockDiagMessageTest, StateMasksFollowTheDesignNote) {
  EXPECT_EQ(boundStateMask(Protocol::kTcp), 1u << 10) << "listeners only: no hash table walks";
  EXPECT_EQ(boundStateMask(Protocol::kTcp, true), (1u << 10) | (1u << 13));
  for (const bool boundOnly : {false, true}) {
    EXPECT_EQ(boundStateMask(Protocol::kTcp, boundOnly) & ~((1u << 10) | (1u << 13)), 0u)
        << "connections (client or accepted) never count";
  }
  EXPECT_EQ(boundStateMask(Protocol::kUdp, true), 0xffffffffu);
  EXPECT_EQ(boundStateMask(Protocol::kUdp), 0xffffffffu);
  EXPECT_EQ(boundStateMask(Protocol::kSctp), 1u << 10);
  // A protocol without bound sockets (ICMP) cannot be asked for: Protocol has no value for it.
  const auto sctp =
      buildSockDiagDump(Family::kIPv4, Protocol::kSctp, boundStateMask(Protocol::kSctp));
  ASSERT_EQ(sctp.size(), 72u);
  EXPECT_EQ(std::to_integer<int>(sctp[17]), IPPROTO_SCTP);
}

// --- Parsing

TEST(SockDiagMessageTest, ParsesIpv4TcpListener) {
  auto socket = parseSockDiagMessage(kernelTcpV4Listener(), Protocol::kTcp);
  ASSERT_TRUE(socket) << socket.error().message;
  EXPECT_EQ(socket->family(), Family::kIPv4);
  EXPECT_EQ(socket->protocol, Protocol::kTcp);
  EXPECT_EQ(socket->state, kTcpListen);
  EXPECT_EQ(socket->port, 8080);
  EXPECT_EQ(socket->inode, 424242u);
  EXPECT_EQ(socket->uid, 1000u);
  EXPECT_EQ(socket->address, *IpAddress::parse("127.0.0.1"));
  EXPECT_EQ(socket->address.bytes().size(), 4u) << "IPv4 uses only the first four bytes";
  EXPECT_EQ(socket->describe(), "tcp 127.0.0.1:8080 (inode 424242, uid 1000)");
}

TEST(SockDiagMessageTest, ParsesIpv6UdpSocket) {
  auto socket = parseSockDiagMessage(kernelUdpV6Socket(), Protocol::kUdp);
  ASSERT_TRUE(socket) << socket.error().message;
  EXPECT_EQ(socket->family(), Family::kIPv6);
  EXPECT_EQ(socket->protocol, Protocol::kUdp);
  EXPECT_EQ(socket->state, kTcpClose);
  EXPECT_EQ(socket->port, 5353);
  EXPECT_EQ(socket->inode, 77u);
  EXPECT_EQ(socket->address, *IpAddress::parse("::1"));
  EXPECT_EQ(socket->describe(), "udp [::1]:5353 (inode 77, uid 0)");
}

TEST(SockDiagMessageTest, ParsesMessageWithoutAttributesAndAtAnyAlignment) {
  const ByteVector bare = message(SOCK_DIAG_BY_FAMILY, 0, diagMsg({}));
  ASSERT_EQ(bare.size(), 88u);
  // Place it at an odd offset: the parser must copy, never cast.
  ByteVector shifted(1);
  append(shifted, bare);
  auto socket =
      parseSockDiagMessage(std::span<const std::byte>(shifted).subspan(1), Protocol::kTcp);
  ASSERT_TRUE(socket) << socket.error().message;
  EXPECT_EQ(socket->port, 8080);
}

TEST(SockDiagMessageTest, PortExtremesAndKernelSocketsSurvive) {
  DiagFields f;
  f.sport = 65535;
  f.inode = 0;  // a kernel socket (VXLAN, WireGuard): no file
  auto high = parseSockDiagMessage(message(SOCK_DIAG_BY_FAMILY, 0, diagMsg(f)), Protocol::kUdp);
  ASSERT_TRUE(high);
  EXPECT_EQ(high->port, 65535);
  EXPECT_EQ(high->inode, 0u);
  f.sport = 0x0102;
  auto order = parseSockDiagMessage(message(SOCK_DIAG_BY_FAMILY, 0, diagMsg(f)), Protocol::kUdp);
  ASSERT_TRUE(order);
  EXPECT_EQ(order->port, 0x0102) << "idiag_sport is network order";
}

TEST(SockDiagMessageTest, ProtocolAttributeMustAgreeWithTheDump) {
  ByteVector body = diagMsg({});
  append(body, attr(INET_DIAG_PROTOCOL, bytesOf({IPPROTO_TCP})));
  const ByteVector agreeing = message(SOCK_DIAG_BY_FAMILY, 0, body);
  EXPECT_TRUE(parseSockDiagMessage(agreeing, Protocol::kTcp));
  const auto mismatch = parseSockDiagMessage(agreeing, Protocol::kUdp);
  ASSERT_FALSE(mismatch);
  EXPECT_EQ(mismatch.error().code, ErrorCode::kDecode);

  ByteVector wide = diagMsg({});
  append(wide, attr(INET_DIAG_PROTOCOL, hostBytes<uint16_t>(IPPROTO_TCP)));
  EXPECT_FALSE(parseSockDiagMessage(message(SOCK_DIAG_BY_FAMILY, 0, wide), Protocol::kTcp));
}

TEST(SockDiagMessageTest, RejectsEveryTruncation) {
  const auto bytes = kernelTcpV4Listener();
  for (size_t n = 0; n < bytes.size(); ++n) {
    // An exactly sized copy, so a sanitizer build catches any read past the end.
    const ByteVector prefix(bytes.begin(), bytes.begin() + static_cast<ptrdiff_t>(n));
    EXPECT_FALSE(parseSockDiagMessage(prefix, Protocol::kTcp)) << "prefix of " << n << " bytes";
  }
}

TEST(SockDiagMessageTest, ShrunkLengthFieldNeverYieldsAWrongSocket) {
  // nlmsg_len set to each smaller value: the message is short but self-consistent. Either the
  // parse fails, or it lost only trailing attributes and still reads the same socket.
  const auto full = kernelTcpV4Listener();
  const auto reference = parseSockDiagMessage(full, Protocol::kTcp);
  ASSERT_TRUE(reference);
  int parsed = 0;
  for (uint32_t len = 0; len < full.size(); ++len) {
    ByteVector bytes(full.begin(), full.begin() + len);
    if (bytes.size() >= 4) std::memcpy(bytes.data(), &len, 4);
    const auto socket = parseSockDiagMessage(bytes, Protocol::kTcp);
    if (len < 88) {
      EXPECT_FALSE(socket) << "no room for inet_diag_msg at len " << len;
    }
    if (!socket) continue;
    ++parsed;
    EXPECT_EQ(*socket, *reference) << "len " << len;
  }
  EXPECT_GE(parsed, 3) << "cuts at 88, 96 and 108 bytes leave whole attributes";
}

TEST(SockDiagMessageTest, RejectsLengthBeyondBufferAndBrokenAttributes) {
  auto longer = kernelTcpV4Listener();
  const uint32_t len = static_cast<uint32_t>(longer.size() + 4);
  std::memcpy(longer.data(), &len, 4);
  EXPECT_FALSE(parseSockDiagMessage(longer, Protocol::kTcp));

  auto shortAttribute = kernelTcpV4Listener();
  shortAttribute[88] = std::byte{3};  // nla_len below the attribute header size
  EXPECT_FALSE(parseSockDiagMessage(shortAttribute, Protocol::kTcp));

  auto overflowing = kernelTcpV4Listener();
  overflowing[88] = std::byte{200};  // nla_len past the end of the message
  EXPECT_FALSE(parseSockDiagMessage(overflowing, Protocol::kTcp));

  ByteVector trailing = diagMsg({});
  append(trailing, bytesOf({1, 2}));  // two stray bytes cannot hold an attribute
  EXPECT_FALSE(parseSockDiagMessage(message(SOCK_DIAG_BY_FAMILY, 0, trailing), Protocol::kTcp));
}

TEST(SockDiagMessageTest, RejectsMessagesThatAreNotInetSockets) {
  const auto error = message(NLMSG_ERROR, 0, hostBytes<int32_t>(-2));
  EXPECT_FALSE(parseSockDiagMessage(error, Protocol::kTcp));
  const auto done = message(NLMSG_DONE, NLM_F_MULTI, hostBytes<int32_t>(0));
  EXPECT_FALSE(parseSockDiagMessage(done, Protocol::kTcp));

  auto unixFamily = kernelTcpV4Listener();
  unixFamily[16] = std::byte{AF_UNIX};
  const auto parsed = parseSockDiagMessage(unixFamily, Protocol::kTcp);
  ASSERT_FALSE(parsed);
  EXPECT_EQ(parsed.error().code, ErrorCode::kDecode);
  EXPECT_NE(parsed.error().message.find("family"), std::string::npos);
}

TEST(SockDiagMessageTest, SurvivesRandomGarbageAndMutations) {
  std::mt19937 random(20240612);  // fixed seed: failures must reproduce
  std::uniform_int_distribution<int> byte(0, 255);
  for (int round = 0; round < 3000; ++round) {
    ByteVector garbage(static_cast<size_t>(random() % 200));
    for (auto& b : garbage) b = static_cast<std::byte>(byte(random));
    if (garbage.size() >= 6 && round % 2 == 0) {  // a plausible header half of the time
      const uint32_t len = static_cast<uint32_t>(garbage.size());
      std::memcpy(garbage.data(), &len, 4);
      const uint16_t type = SOCK_DIAG_BY_FAMILY;
      std::memcpy(garbage.data() + 4, &type, 2);
    }
    const auto socket = parseSockDiagMessage(garbage, Protocol::kUdp);
    if (socket) {
      EXPECT_EQ(socket->protocol, Protocol::kUdp);
    }
  }
  const auto valid = kernelUdpV6Socket();
  for (int round = 0; round < 5000; ++round) {
    ByteVector mutated = valid;
    for (int flips = 1 + static_cast<int>(random() % 4); flips > 0; --flips) {
      mutated[random() % mutated.size()] = static_cast<std::byte>(byte(random));
    }
    const auto socket = parseSockDiagMessage(mutated, Protocol::kUdp);
    if (socket) {
      EXPECT_TRUE(socket->family() == Family::kIPv4 || socket->family() == Family::kIPv6);
      EXPECT_FALSE(socket->describe().empty());
    }
  }
}

}  // namespace
}  // namespace hostport::hostnet
