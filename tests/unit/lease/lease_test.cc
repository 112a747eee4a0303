#include "lease/lease.h"

#include <gtest/gtest.h>

namespace hostport {
namespace {

TEST(LeaseTest, NamesAndParsesEveryProtocol) {
  for (const auto protocol :
       {PortProtocol::kTcp, PortProtocol::kUdp, PortProtocol::kSctp, PortProtocol::kTcpUdp}) {
    EXPECT_EQ(parsePortProtocol(protocolName(protocol)), protocol);
  }
  EXPECT_EQ(parsePortProtocol("TCPUDP"), PortProtocol::kTcpUdp);
  EXPECT_EQ(parsePortProtocol("Udp"), PortProtocol::kUdp);
}

TEST(LeaseTest, RejectsUnknownProtocolNamingTheText) {
  for (const auto* text : {"", "icmp", "tcp ", "tcp/udp"}) {
    auto parsed = parsePortProtocol(text);
    ASSERT_FALSE(parsed) << text;
    EXPECT_EQ(parsed.error().code, ErrorCode::kInvalidArgument);
    EXPECT_NE(parsed.error().message.find(std::string("\"") + text + "\""), std::string::npos)
        << parsed.error().message;
  }
}

TEST(LeaseTest, NamesTheKernelProtocolsAsCommonDoesAndTcpUdpItsOwnWay) {
  for (const Protocol protocol : kAllProtocols) {
    EXPECT_EQ(protocolName(portProtocol(protocol)), hostport::protocolName(protocol));
  }
  EXPECT_EQ(protocolName(PortProtocol::kTcp), "tcp");
  EXPECT_EQ(protocolName(PortProtocol::kUdp), "udp");
  EXPECT_EQ(protocolName(PortProtocol::kSctp), "sctp");
  EXPECT_EQ(protocolName(PortProtocol::kTcpUdp), "tcpudp");
  EXPECT_EQ(parsePortProtocol("TcpUdp"), PortProtocol::kTcpUdp);
  EXPECT_EQ(parsePortProtocol("SCTP"), PortProtocol::kSctp);
}

TEST(LeaseTest, ListsAllFourNamesWhenRefusing) {
  EXPECT_EQ(parsePortProtocol("icmp").error().message,
            "unknown protocol \"icmp\" (want tcp, udp, sctp or tcpudp)");
  EXPECT_EQ(parsePortProtocol("tcpud").error().message,
            "unknown protocol \"tcpud\" (want tcp, udp, sctp or tcpudp)");
}

TEST(LeaseTest, QuotesHostileTextSafelyInErrors) {
  auto parsed = parsePortProtocol("tcp\n\"injected\"" + std::string(200, 'x'));
  ASSERT_FALSE(parsed);
  EXPECT_EQ(parsed.error().message.find('\n'), std::string::npos);
  EXPECT_LT(parsed.error().message.size(), 160u);
}

std::vector<Protocol> kernelOf(PortProtocol protocol) {
  const auto kernel = kernelProtocols(protocol);
  return {kernel.begin(), kernel.end()};
}

TEST(LeaseTest, TcpUdpOccupiesBothKernelProtocols) {
  EXPECT_EQ(kernelOf(PortProtocol::kTcpUdp), (std::vector{Protocol::kTcp, Protocol::kUdp}));
  EXPECT_EQ(kernelOf(PortProtocol::kSctp), std::vector{Protocol::kSctp});
  EXPECT_EQ(kernelOf(PortProtocol::kTcp), std::vector{Protocol::kTcp});
  EXPECT_EQ(kernelOf(PortProtocol::kUdp), std::vector{Protocol::kUdp});
}

TEST(LeaseTest, EachKernelProtocolHasThePortProtocolThatOccupiesOnlyIt) {
  for (const Protocol protocol : kAllProtocols) {
    EXPECT_EQ(kernelOf(portProtocol(protocol)), std::vector{protocol}) << protocolName(protocol);
  }
}

TEST(LeaseTest, ParsesRangesAndSinglePorts) {
  EXPECT_EQ(PortRange::parse("30000-32767"), (PortRange{30000, 32767}));
  EXPECT_EQ(PortRange::parse("8080"), (PortRange{8080, 8080}));
  EXPECT_EQ(PortRange::parse("1-65535"), (PortRange{1, 65535}));
  EXPECT_EQ(PortRange::parse("7-7"), (PortRange{7, 7}));
}

TEST(LeaseTest, PrintsRangesTheWayTheyAreParsed) {
  EXPECT_EQ((PortRange{30000, 32767}).str(), "30000-32767");
  EXPECT_EQ((PortRange{8080, 8080}).str(), "8080");
  for (const auto* text : {"1-65535", "8080", "20000-20009"}) {
    EXPECT_EQ(PortRange::parse(text)->str(), text);
  }
}

TEST(LeaseTest, RejectsMalformedRangesNamingTheText) {
  for (const auto* text : {"", "-", "0", "0-10", "65536", "1-65536", "abc", "10-", "-10", "+10",
                           " 10", "10 ", "10-20-30", "0x10", "100000", "1.5"}) {
    auto parsed = PortRange::parse(text);
    ASSERT_FALSE(parsed) << text;
    EXPECT_EQ(parsed.error().code, ErrorCode::kInvalidArgument);
    EXPECT_NE(parsed.error().message.find(std::string("\"") + text + "\""), std::string::npos)
        << parsed.error().message;
  }
}

TEST(LeaseTest, RejectsRangesWhoseFirstPortIsAboveTheLast) {
  auto parsed = PortRange::parse("32767-30000");
  ASSERT_FALSE(parsed);
  EXPECT_NE(parsed.error().message.find("\"32767-30000\""), std::string::npos);
  EXPECT_NE(parsed.error().message.find("empty"), std::string::npos);
}

TEST(LeaseTest, CountsAndContainsPortsOfARange) {
  const PortRange range{100, 109};
  EXPECT_EQ(range.size(), 10u);
  EXPECT_TRUE(range.contains(100));
  EXPECT_TRUE(range.contains(109));
  EXPECT_FALSE(range.contains(99));
  EXPECT_FALSE(range.contains(110));
  EXPECT_EQ((PortRange{1, 65535}).size(), 65535u);
}

TEST(LeaseTest, NamesKeysAsContainerIdSlashIfname) {
  EXPECT_EQ((AttachmentKey{"abc", "eth0"}).str(), "abc/eth0");
  EXPECT_LT((AttachmentKey{"abc", "eth0"}), (AttachmentKey{"abc", "eth1"}));
  EXPECT_LT((AttachmentKey{"abc", "eth9"}), (AttachmentKey{"abd", "eth0"}));
}

TEST(LeaseTest, PrintsGrantsAsHostToContainerPortsWithTheProtocol) {
  EXPECT_EQ((PortGrant{"web", PortProtocol::kTcp, 30000, 80, 1, {}, false}).str(), "30000->80/tcp");
  EXPECT_EQ((PortGrant{"rtp", PortProtocol::kUdp, 20000, 5000, 10, {}, false}).str(),
            "20000-20009->5000-5009/udp");
  EXPECT_EQ(
      (PortGrant{"", PortProtocol::kTcpUdp, 53, 53, 1, *IpAddress::parse("10.0.0.1"), true}).str(),
      "10.0.0.1:53->53/tcpudp");
  EXPECT_EQ(
      (PortGrant{"", PortProtocol::kSctp, 8080, 80, 1, *IpAddress::parse("fd00::1"), true}).str(),
      "[fd00::1]:8080->80/sctp");
  // A hostNetwork pod's rows forward nowhere.
  EXPECT_EQ((PortGrant{"rtp", PortProtocol::kUdp, 41001, 0, 4, {}, false}).str(),
            "41001-41004/udp");
}

TEST(LeaseTest, AHostNetworkPodsKeyNamesItsUidAndNoOtherKeyDoes) {
  const AttachmentKey key = AttachmentKey::ofHostNetworkPod("1b4e28ba-2fa1");
  EXPECT_EQ(key.str(), "hostnetwork-1b4e28ba-2fa1/host");
  EXPECT_EQ(key.hostNetworkPodUid(), "1b4e28ba-2fa1");
  EXPECT_EQ((AttachmentKey{"hostnetwork-1b4e28ba-2fa1", "eth0"}.hostNetworkPodUid()), "");
  EXPECT_EQ((AttachmentKey{"4c1f0e", "host"}.hostNetworkPodUid()), "");
}

}  // namespace
}  // namespace hostport
