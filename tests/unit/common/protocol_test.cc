#include "common/protocol.h"

#include <gtest/gtest.h>
#include <netinet/in.h>

namespace hostport {
namespace {

TEST(ProtocolTest, NamesEveryProtocolAndParsesTheNameBack) {
  for (const Protocol protocol : kAllProtocols) {
    const auto parsed = parseProtocol(protocolName(protocol));
    ASSERT_TRUE(parsed) << protocolName(protocol);
    EXPECT_EQ(*parsed, protocol);
  }
  EXPECT_EQ(protocolName(Protocol::kTcp), "tcp");
  EXPECT_EQ(protocolName(Protocol::kUdp), "udp");
  EXPECT_EQ(protocolName(Protocol::kSctp), "sctp");
}

TEST(ProtocolTest, ParsesNamesInAnyCase) {
  EXPECT_EQ(*parseProtocol("TCP"), Protocol::kTcp);  // containerd's spelling
  EXPECT_EQ(*parseProtocol("Udp"), Protocol::kUdp);
  EXPECT_EQ(*parseProtocol("sCtP"), Protocol::kSctp);
}

TEST(ProtocolTest, RefusesWhatIsNotAProtocolAndQuotesIt) {
  for (const auto* bad : {"", "icmp", "tcpudp", "tcp ", " tcp", "t\ncp", "udp6"}) {
    const auto parsed = parseProtocol(bad);
    ASSERT_FALSE(parsed) << bad;
    EXPECT_EQ(parsed.error().code, ErrorCode::kInvalidArgument);
  }
  EXPECT_EQ(parseProtocol("t\ncp").error().message,
            "unknown protocol \"t\\ncp\" (want tcp, udp or sctp)");
}

TEST(ProtocolTest, MapsIanaNumbersBothWays) {
  EXPECT_EQ(ipProtocolNumber(Protocol::kTcp), IPPROTO_TCP);
  EXPECT_EQ(ipProtocolNumber(Protocol::kUdp), IPPROTO_UDP);
  EXPECT_EQ(ipProtocolNumber(Protocol::kSctp), IPPROTO_SCTP);
  for (const Protocol protocol : kAllProtocols) {
    EXPECT_EQ(fromIpProtocolNumber(ipProtocolNumber(protocol)), protocol);
  }
  EXPECT_EQ(fromIpProtocolNumber(IPPROTO_ICMP), std::nullopt);
  EXPECT_EQ(fromIpProtocolNumber(0), std::nullopt);
  EXPECT_EQ(fromIpProtocolNumber(255), std::nullopt);
}

TEST(ProtocolTest, NamesAnyIpProtocolNumber) {
  EXPECT_EQ(ipProtocolName(IPPROTO_TCP), "tcp");
  EXPECT_EQ(ipProtocolName(IPPROTO_UDP), "udp");
  EXPECT_EQ(ipProtocolName(IPPROTO_SCTP), "sctp");
  EXPECT_EQ(ipProtocolName(IPPROTO_ICMP), "icmp");
  EXPECT_EQ(ipProtocolName(IPPROTO_ICMPV6), "icmpv6");
  EXPECT_EQ(ipProtocolName(99), "proto 99");
}

TEST(ProtocolTest, DescribesAPortWithItsProtocol) {
  EXPECT_EQ(describePort(Protocol::kTcp, 8080), "tcp/8080");
  EXPECT_EQ(describePort(Protocol::kUdp, 1), "udp/1");
  EXPECT_EQ(describePort(Protocol::kSctp, 65535), "sctp/65535");
}

TEST(ProtocolSetTest, HoldsWhatWasAddedAndNothingElse) {
  ProtocolSet set;
  EXPECT_TRUE(set.empty());
  set.add(Protocol::kUdp);
  EXPECT_FALSE(set.empty());
  EXPECT_TRUE(set.contains(Protocol::kUdp));
  EXPECT_FALSE(set.contains(Protocol::kTcp));
  EXPECT_FALSE(set.contains(Protocol::kSctp));
  set.add(Protocol::kUdp);  // twice is once
  EXPECT_EQ(set, ProtocolSet{Protocol::kUdp});
  set |= ProtocolSet{Protocol::kTcp};
  EXPECT_EQ(set, (ProtocolSet{Protocol::kTcp, Protocol::kUdp}));
}

TEST(ProtocolSetTest, AllHoldsEveryProtocol) {
  for (const Protocol protocol : kAllProtocols) EXPECT_TRUE(ProtocolSet::all().contains(protocol));
  EXPECT_EQ(ProtocolSet::all(), (ProtocolSet{Protocol::kSctp, Protocol::kUdp, Protocol::kTcp}));
}

TEST(ProtocolSetTest, IncludesASubsetOnly) {
  const ProtocolSet tcpUdp{Protocol::kTcp, Protocol::kUdp};
  EXPECT_TRUE(tcpUdp.includes(ProtocolSet{Protocol::kTcp}));
  EXPECT_TRUE(tcpUdp.includes(tcpUdp));
  EXPECT_TRUE(tcpUdp.includes(ProtocolSet{}));
  EXPECT_FALSE(tcpUdp.includes(ProtocolSet{Protocol::kSctp}));
  EXPECT_FALSE(tcpUdp.includes(ProtocolSet::all()));
  EXPECT_TRUE(ProtocolSet::all().includes(tcpUdp));
}

}  // namespace
}  // namespace hostport
