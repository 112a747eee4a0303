#include "hostnet/route_message.h"

#include <gtest/gtest.h>
#include <linux/netlink.h>
#include <linux/rtnetlink.h>
#include <sys/socket.h>

#include <cstring>
#include <random>
#include <vector>

#include "tests/unit/netlink/netlink_test_bytes.h"

namespace hostport::hostnet {
namespace {

using test::attr;
using test::bytesOf;
using test::ByteVector;
using test::hostBytes;
using test::message;

/// A hand-built rtnetlink message: header, 12-byte rtmsg, attributes.
ByteVector routeMessage(uint16_t type, int family, std::initializer_list<ByteVector> attributes,
                        int routeType = RTN_UNICAST) {
  return message(type, 0,
                 bytesOf({family, family == AF_INET ? 32 : 128, 0, 0, RT_TABLE_MAIN, RTPROT_KERNEL,
                          RT_SCOPE_LINK, routeType, 0, 0, 0, 0}),
                 attributes);
}

/// Shaped like the kernel's answer to `ip route get 10.1.2.3` through interface 7.
ByteVector kernelReply() {
  return routeMessage(
      RTM_NEWROUTE, AF_INET,
      {attr(RTA_TABLE, hostBytes<uint32_t>(RT_TABLE_MAIN)), attr(RTA_DST, bytesOf({10, 1, 2, 3})),
       attr(RTA_OIF, hostBytes<uint32_t>(7)), attr(RTA_PREFSRC, bytesOf({10, 1, 2, 1})),
       attr(RTA_UID, hostBytes<uint32_t>(0))});
}

IpAddress ip(const char* text) { return *IpAddress::parse(text); }

TEST(RouteMessageTest, GetRouteRequestMatchesGoldenBytes) {
  const ByteVector expected = bytesOf({
      0x24, 0x00, 0x00, 0x00,  // nlmsg_len 36
      0x1a, 0x00,              // RTM_GETROUTE
      0x05, 0x00,              // NLM_F_REQUEST | NLM_F_ACK
      0x00, 0x00, 0x00, 0x00,  // seq (set by the socket)
      0x00, 0x00, 0x00, 0x00,  // pid
      0x02, 0x20, 0x00, 0x00,  // rtmsg: AF_INET, dst_len 32, src_len 0, tos 0
      0x00, 0x00, 0x00, 0x00,  //        table, protocol, scope, type: unspecified
      0x00, 0x00, 0x00, 0x00,  //        flags
      0x08, 0x00, 0x01, 0x00,  // RTA_DST, len 8
      0x0a, 0x01, 0x02, 0x03,  //   10.1.2.3 in network order
  });
  EXPECT_EQ(buildRouteGet(ip("10.1.2.3")), expected);
}

TEST(RouteMessageTest, GetRouteRequestForIpv6MatchesGoldenBytes) {
  const ByteVector expected = bytesOf({
      0x30, 0x00, 0x00, 0x00,  // nlmsg_len 48
      0x1a, 0x00,              // RTM_GETROUTE
      0x05, 0x00,              // NLM_F_REQUEST | NLM_F_ACK
      0x00, 0x00, 0x00, 0x00,  // seq (set by the socket)
      0x00, 0x00, 0x00, 0x00,  // pid
      0x0a, 0x80, 0x00, 0x00,  // rtmsg: AF_INET6, dst_len 128, src_len 0, tos 0
      0x00, 0x00, 0x00, 0x00,  //        table, protocol, scope, type: unspecified
      0x00, 0x00, 0x00, 0x00,  //        flags
      0x14, 0x00, 0x01, 0x00,  // RTA_DST, len 20
      0x20, 0x01, 0x0d, 0xb8,  //   2001:db8::1 in network order
      0x00, 0x00, 0x00, 0x00,  //
      0x00, 0x00, 0x00, 0x00,  //
      0x00, 0x00, 0x00, 0x01,  //
  });
  EXPECT_EQ(buildRouteGet(ip("2001:db8::1")), expected);
}

TEST(RouteMessageTest, ParsesTheRouteTypeOfEitherFamily) {
  // `ip route get 10.88.0.1` on the node that holds it: type local, through lo.
  auto local = parseRouteReply(
      routeMessage(RTM_NEWROUTE, AF_INET, {attr(RTA_OIF, hostBytes<uint32_t>(1))}, RTN_LOCAL));
  ASSERT_TRUE(local) << local.error().message;
  EXPECT_EQ(local->type, RTN_LOCAL);
  EXPECT_EQ(local->outputInterface, 1u);

  auto v6 = parseRouteReply(
      routeMessage(RTM_NEWROUTE, AF_INET6,
                   {attr(RTA_DST, bytesOf({0xfd, 0, 0, 0x88, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 5})),
                    attr(RTA_OIF, hostBytes<uint32_t>(4))}));
  ASSERT_TRUE(v6) << v6.error().message;
  EXPECT_EQ(v6->type, RTN_UNICAST);
  EXPECT_EQ(v6->outputInterface, 4u);

  auto unreachable = parseRouteReply(routeMessage(RTM_NEWROUTE, AF_INET, {}, RTN_UNREACHABLE));
  ASSERT_TRUE(unreachable) << unreachable.error().message;
  EXPECT_EQ(unreachable->type, RTN_UNREACHABLE);
  EXPECT_EQ(unreachable->outputInterface, std::nullopt);
}

TEST(RouteMessageTest, ParsesOutputInterfaceFromReply) {
  auto oif = parseRouteOutputInterface(kernelReply());
  ASSERT_TRUE(oif) << oif.error().message;
  EXPECT_EQ(*oif, 7u);
}

TEST(RouteMessageTest, ReportsRouteWithoutOutputInterface) {
  const auto blackhole =
      routeMessage(RTM_NEWROUTE, AF_INET, {attr(RTA_DST, bytesOf({10, 1, 2, 3}))});
  auto oif = parseRouteOutputInterface(blackhole);
  ASSERT_FALSE(oif);
  EXPECT_EQ(oif.error().code, ErrorCode::kNotFound);

  const auto zero = routeMessage(RTM_NEWROUTE, AF_INET, {attr(RTA_OIF, hostBytes<uint32_t>(0))});
  EXPECT_FALSE(parseRouteOutputInterface(zero));
}

TEST(RouteMessageTest, RejectsOutputInterfaceOfTheWrongSize) {
  const auto bytes = routeMessage(RTM_NEWROUTE, AF_INET, {attr(RTA_OIF, hostBytes<uint16_t>(7))});
  auto oif = parseRouteOutputInterface(bytes);
  ASSERT_FALSE(oif);
  EXPECT_EQ(oif.error().code, ErrorCode::kDecode);
}

TEST(RouteMessageTest, RejectsOtherMessagesAndFamilies) {
  EXPECT_FALSE(parseRouteOutputInterface(
      routeMessage(RTM_NEWLINK, AF_INET, {attr(RTA_OIF, hostBytes<uint32_t>(7))})));
  EXPECT_FALSE(parseRouteOutputInterface(
      routeMessage(RTM_NEWROUTE, AF_BRIDGE, {attr(RTA_OIF, hostBytes<uint32_t>(7))})));
}

TEST(RouteMessageTest, RejectsEveryTruncation) {
  const auto bytes = kernelReply();
  for (size_t n = 0; n < bytes.size(); ++n) {
    const ByteVector prefix(bytes.begin(), bytes.begin() + static_cast<ptrdiff_t>(n));
    EXPECT_FALSE(parseRouteOutputInterface(prefix)) << "prefix of " << n << " bytes";
  }
}

TEST(RouteMessageTest, RejectsBadLengthFields) {
  auto tooLong = kernelReply();
  const uint32_t len = static_cast<uint32_t>(tooLong.size() + 1);
  std::memcpy(tooLong.data(), &len, 4);
  EXPECT_FALSE(parseRouteOutputInterface(tooLong));

  auto tooShort = kernelReply();
  const uint32_t tiny = 8;
  std::memcpy(tooShort.data(), &tiny, 4);
  EXPECT_FALSE(parseRouteOutputInterface(tooShort));

  auto badAttr = kernelReply();
  badAttr[28] = std::byte{3};  // nla_len of the first attribute, below the header size
  badAttr[29] = std::byte{0};
  EXPECT_FALSE(parseRouteOutputInterface(badAttr));

  auto overlong = kernelReply();
  overlong[28] = std::byte{0xff};  // first attribute claims more than the message holds
  EXPECT_FALSE(parseRouteOutputInterface(overlong));
}

TEST(RouteMessageTest, SurvivesRandomGarbageAndMutations) {
  std::mt19937 random(7);  // fixed seed: failures must reproduce
  std::uniform_int_distribution<int> byte(0, 255);
  for (int round = 0; round < 2000; ++round) {
    ByteVector garbage(static_cast<size_t>(random() % 96));
    for (auto& b : garbage) b = static_cast<std::byte>(byte(random));
    if (garbage.size() >= 4 && round % 2 == 0) {
      const uint32_t len = static_cast<uint32_t>(garbage.size());
      std::memcpy(garbage.data(), &len, 4);
    }
    (void)parseRouteOutputInterface(garbage);
  }
  const auto valid = kernelReply();
  int parsed = 0;
  for (int round = 0; round < 3000; ++round) {
    ByteVector mutated = valid;
    mutated[4 + random() % (mutated.size() - 4)] = static_cast<std::byte>(byte(random));
    if (auto oif = parseRouteOutputInterface(mutated)) {
      EXPECT_NE(*oif, 0u);
      ++parsed;
    }
  }
  EXPECT_GT(parsed, 0) << "mutations of unused bytes must still parse";
}

}  // namespace
}  // namespace hostport::hostnet
