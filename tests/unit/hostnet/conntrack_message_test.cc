#include "hostnet/conntrack_message.h"

#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <linux/netfilter/nfnetlink.h>
#include <linux/netfilter/nfnetlink_conntrack.h>
#include <linux/netlink.h>
#include <netinet/in.h>

#include <cstring>
#include <random>
#include <vector>

#include "tests/unit/netlink/netlink_test_bytes.h"

namespace hostport::hostnet {
namespace {

using test::attr;
using test::be16;
using test::be32;
using test::bytesOf;
using test::ByteVector;
using test::findAttribute;
using test::headerOf;
using test::hostBytes;
using test::message;
using test::nest;

ByteVector nfgen(int family) { return bytesOf({family, NFNETLINK_V0, 0, 0}); }

constexpr uint16_t kCtNew = (NFNL_SUBSYS_CTNETLINK << 8) | IPCTNL_MSG_CT_NEW;
constexpr uint16_t kCtDelete = (NFNL_SUBSYS_CTNETLINK << 8) | IPCTNL_MSG_CT_DELETE;

ByteVector v4TupleIp(std::initializer_list<int> src, std::initializer_list<int> dst) {
  return nest(CTA_TUPLE_IP, {attr(CTA_IP_V4_SRC, bytesOf(src)), attr(CTA_IP_V4_DST, bytesOf(dst))});
}

ByteVector portProto(uint8_t proto, uint16_t sport, uint16_t dport) {
  return nest(CTA_TUPLE_PROTO,
              {attr(CTA_PROTO_NUM, bytesOf({proto})), attr(CTA_PROTO_SRC_PORT, be16(sport)),
               attr(CTA_PROTO_DST_PORT, be16(dport))});
}

/// What a dump of one IPv4 UDP flow 10.0.0.1:40000 -> 10.0.0.2:53 looks like, reply and extras
/// included, with a zone and an id.
ByteVector kernelUdpV4Message() {
  return message(kCtNew, NLM_F_MULTI, nfgen(AF_INET),
                 {nest(CTA_TUPLE_ORIG, {v4TupleIp({10, 0, 0, 1}, {10, 0, 0, 2}),
                                        portProto(IPPROTO_UDP, 40000, 53)}),
                  nest(CTA_TUPLE_REPLY, {v4TupleIp({10, 0, 0, 2}, {10, 0, 0, 1}),
                                         portProto(IPPROTO_UDP, 53, 40000)}),
                  attr(CTA_ZONE, be16(7)), attr(CTA_STATUS, be32(0x8)), attr(CTA_TIMEOUT, be32(30)),
                  attr(CTA_ID, be32(0xdeadbeef)), attr(CTA_USE, be32(1))});
}

ByteVector kernelUdpV6Message() {
  const ByteVector src = bytesOf({0x20, 0x01, 0x0d, 0xb8, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1});
  const ByteVector dst = bytesOf({0x20, 0x01, 0x0d, 0xb8, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 2});
  return message(kCtNew, NLM_F_MULTI, nfgen(AF_INET6),
                 {nest(CTA_TUPLE_ORIG,
                       {nest(CTA_TUPLE_IP, {attr(CTA_IP_V6_SRC, src), attr(CTA_IP_V6_DST, dst)}),
                        portProto(IPPROTO_UDP, 5000, 7777)}),
                  attr(CTA_ID, be32(17))});
}

// --- Dump requests

TEST(ConntrackMessageTest, DumpRequestIsBareHeaderForFamily) {
  const auto v4 = buildConntrackDump(Family::kIPv4);
  ASSERT_EQ(v4.size(), 20u);
  const nlmsghdr header = headerOf(v4);
  EXPECT_EQ(header.nlmsg_len, 20u);
  EXPECT_EQ(header.nlmsg_type, 0x0101);  // NFNL_SUBSYS_CTNETLINK << 8 | IPCTNL_MSG_CT_GET
  EXPECT_EQ(header.nlmsg_flags, NLM_F_REQUEST | NLM_F_DUMP);
  EXPECT_EQ(header.nlmsg_seq, 0u);
  EXPECT_EQ(header.nlmsg_pid, 0u);
  EXPECT_EQ(ByteVector(v4.begin() + 16, v4.end()), bytesOf({AF_INET, NFNETLINK_V0, 0, 0}));

  const auto v6 = buildConntrackDump(Family::kIPv6);
  ASSERT_EQ(v6.size(), 20u);
  EXPECT_EQ(std::to_integer<int>(v6[16]), AF_INET6);
}

TEST(ConntrackMessageTest, FilteredDumpRequestMatchesGoldenBytes) {
  // Written out by hand from the ctnetlink ABI (x86-64, little-endian host fields).
  const ByteVector expected = bytesOf({
      0x38, 0x00, 0x00, 0x00,  // nlmsg_len 56
      0x01, 0x01,              // type: ctnetlink << 8 | CT_GET
      0x01, 0x03,              // flags: REQUEST | DUMP
      0x00, 0x00, 0x00, 0x00,  // seq (set by the socket)
      0x00, 0x00, 0x00, 0x00,  // pid
      0x0a, 0x00, 0x00, 0x00,  // nfgenmsg: AF_INET6, V0, res_id 0
      0x18, 0x00, 0x01, 0x80,  // CTA_TUPLE_ORIG | NLA_F_NESTED, len 24
      0x14, 0x00, 0x02, 0x80,  //   CTA_TUPLE_PROTO | NLA_F_NESTED, len 20
      0x05, 0x00, 0x01, 0x00,  //     CTA_PROTO_NUM, len 5
      0x11, 0x00, 0x00, 0x00,  //       17 (udp) + padding
      0x06, 0x00, 0x03, 0x00,  //     CTA_PROTO_DST_PORT, len 6
      0x14, 0xe9, 0x00, 0x00,  //       5353 in network order + padding
      0x0c, 0x00, 0x19, 0x80,  // CTA_FILTER | NLA_F_NESTED, len 12
      0x08, 0x00, 0x01, 0x00,  //   CTA_FILTER_ORIG_FLAGS, len 8
      0x28, 0x00, 0x00, 0x00,  //     PROTO_NUM (1<<3) | PROTO_DST_PORT (1<<5), host order
  });
  EXPECT_EQ(buildConntrackDump(Family::kIPv6, 5353), expected);
}

TEST(ConntrackMessageTest, FilteredDumpPutsPortInNetworkOrder) {
  const auto request = buildConntrackDump(Family::kIPv4, 0x1234);
  const ByteVector tuple = findAttribute(request, 20, CTA_TUPLE_ORIG);
  const ByteVector proto = findAttribute(tuple, 0, CTA_TUPLE_PROTO);
  EXPECT_EQ(findAttribute(proto, 0, CTA_PROTO_DST_PORT), bytesOf({0x12, 0x34}));
  EXPECT_EQ(findAttribute(proto, 0, CTA_PROTO_NUM), bytesOf({IPPROTO_UDP}));
  EXPECT_TRUE(findAttribute(proto, 0, CTA_PROTO_SRC_PORT).empty());
  EXPECT_TRUE(findAttribute(tuple, 0, CTA_TUPLE_IP).empty()) << "no address: any host IP";
}

TEST(ConntrackMessageTest, UdpDumpFiltersOnTheProtocolAlone) {
  const auto request = buildUdpConntrackDump(Family::kIPv4);
  const ByteVector tuple = findAttribute(request, 20, CTA_TUPLE_ORIG);
  const ByteVector proto = findAttribute(tuple, 0, CTA_TUPLE_PROTO);
  EXPECT_EQ(findAttribute(proto, 0, CTA_PROTO_NUM), bytesOf({IPPROTO_UDP}));
  EXPECT_TRUE(findAttribute(proto, 0, CTA_PROTO_DST_PORT).empty()) << "every port";
  const ByteVector filter = findAttribute(request, 20, CTA_FILTER);
  EXPECT_EQ(findAttribute(filter, 0, CTA_FILTER_ORIG_FLAGS), bytesOf({0x08, 0x00, 0x00, 0x00}))
      << "PROTO_NUM (1<<3) alone, host order";
}

// --- Parsing

TEST(ConntrackMessageTest, ParsesIpv4UdpEntry) {
  const auto bytes = kernelUdpV4Message();
  auto entry = parseConntrackMessage(bytes);
  ASSERT_TRUE(entry) << entry.error().message;
  EXPECT_EQ(entry->family(), Family::kIPv4);
  EXPECT_EQ(entry->l4proto, IPPROTO_UDP);
  EXPECT_EQ(entry->origSrc, *IpAddress::parse("10.0.0.1"));
  EXPECT_EQ(entry->origDst, *IpAddress::parse("10.0.0.2"));
  EXPECT_EQ(entry->origSrcPort, 40000);
  EXPECT_EQ(entry->origDstPort, 53);
  EXPECT_EQ(entry->zone, 7);
  EXPECT_EQ(entry->id, 0xdeadbeefu);
  EXPECT_EQ(entry->describe(), "udp 10.0.0.1:40000 -> 10.0.0.2:53");
}

TEST(ConntrackMessageTest, KeepsRawOriginalTupleVerbatim) {
  const auto bytes = kernelUdpV4Message();
  auto entry = parseConntrackMessage(bytes);
  ASSERT_TRUE(entry);
  EXPECT_EQ(entry->rawOrigTuple, findAttribute(bytes, 20, CTA_TUPLE_ORIG));
  EXPECT_NE(entry->rawOrigTuple, findAttribute(bytes, 20, CTA_TUPLE_REPLY));
}

TEST(ConntrackMessageTest, ParsesIpv6UdpEntryWithoutZone) {
  const auto bytes = kernelUdpV6Message();
  auto entry = parseConntrackMessage(bytes);
  ASSERT_TRUE(entry) << entry.error().message;
  EXPECT_EQ(entry->family(), Family::kIPv6);
  EXPECT_EQ(entry->origDstPort, 7777);
  EXPECT_EQ(entry->origDst, *IpAddress::parse("2001:db8::2"));
  EXPECT_FALSE(entry->zone.has_value());
  EXPECT_EQ(entry->id, 17u);
  EXPECT_EQ(entry->describe(), "udp [2001:db8::1]:5000 -> [2001:db8::2]:7777");
}

TEST(ConntrackMessageTest, ParsesIcmpEntryWithoutPorts) {
  const auto bytes = message(
      kCtNew, NLM_F_MULTI, nfgen(AF_INET),
      {nest(CTA_TUPLE_ORIG, {v4TupleIp({1, 1, 1, 1}, {2, 2, 2, 2}),
                             nest(CTA_TUPLE_PROTO, {attr(CTA_PROTO_NUM, bytesOf({IPPROTO_ICMP})),
                                                    attr(CTA_PROTO_ICMP_ID, be16(9)),
                                                    attr(CTA_PROTO_ICMP_TYPE, bytesOf({8}))})})});
  auto entry = parseConntrackMessage(bytes);
  ASSERT_TRUE(entry) << entry.error().message;
  EXPECT_EQ(entry->l4proto, IPPROTO_ICMP);
  EXPECT_EQ(entry->origDstPort, 0);
  EXPECT_FALSE(isUdpToPort(*entry, 0));
}

TEST(ConntrackMessageTest, MatchesOnlyUdpToTheGivenPort) {
  auto udp = parseConntrackMessage(kernelUdpV4Message());
  ASSERT_TRUE(udp);
  EXPECT_TRUE(isUdpToPort(*udp, 53));
  EXPECT_FALSE(isUdpToPort(*udp, 40000)) << "source port must not match";
  EXPECT_FALSE(isUdpToPort(*udp, 54));

  const auto tcpBytes = message(kCtNew, NLM_F_MULTI, nfgen(AF_INET),
                                {nest(CTA_TUPLE_ORIG, {v4TupleIp({10, 0, 0, 1}, {10, 0, 0, 2}),
                                                       portProto(IPPROTO_TCP, 40000, 53)})});
  auto tcp = parseConntrackMessage(tcpBytes);
  ASSERT_TRUE(tcp);
  EXPECT_FALSE(isUdpToPort(*tcp, 53));
}

TEST(ConntrackMessageTest, RejectsEveryTruncation) {
  const auto bytes = kernelUdpV4Message();
  for (size_t n = 0; n < bytes.size(); ++n) {
    // An exactly sized copy, so a sanitizer build catches any read past the end.
    const ByteVector prefix(bytes.begin(), bytes.begin() + static_cast<ptrdiff_t>(n));
    EXPECT_FALSE(parseConntrackMessage(prefix)) << "prefix of " << n << " bytes";
  }
}

TEST(ConntrackMessageTest, TruncatedLengthFieldNeverYieldsAWrongEntry) {
  // nlmsg_len shrunk to each possible value: the message is then short but self-consistent.
  // Either the parse fails, or it only lost trailing attributes the tuple does not need.
  const auto full = kernelUdpV4Message();
  const auto reference = parseConntrackMessage(full);
  ASSERT_TRUE(reference);
  for (uint32_t len = 0; len < full.size(); ++len) {
    ByteVector bytes(full.begin(), full.begin() + len);
    if (bytes.size() >= 4) std::memcpy(bytes.data(), &len, 4);
    const auto entry = parseConntrackMessage(bytes);
    if (!entry) continue;
    EXPECT_EQ(entry->rawOrigTuple, reference->rawOrigTuple) << "len " << len;
    EXPECT_EQ(entry->origDstPort, 53) << "len " << len;
  }
}

TEST(ConntrackMessageTest, RejectsLengthBeyondBuffer) {
  auto bytes = kernelUdpV4Message();
  const uint32_t len = static_cast<uint32_t>(bytes.size() + 4);
  std::memcpy(bytes.data(), &len, 4);
  EXPECT_FALSE(parseConntrackMessage(bytes));
}

TEST(ConntrackMessageTest, RejectsNestedLengthOverflowingItsParent) {
  // CTA_TUPLE_IP claims 64 bytes inside a CTA_TUPLE_ORIG that holds fewer.
  ByteVector badIp = v4TupleIp({10, 0, 0, 1}, {10, 0, 0, 2});
  badIp[0] = std::byte{64};
  const auto bytes =
      message(kCtNew, 0, nfgen(AF_INET),
              {nest(CTA_TUPLE_ORIG, {badIp, portProto(IPPROTO_UDP, 1, 2)}),
               attr(CTA_STATUS, be32(0)), attr(CTA_TIMEOUT, be32(0)), attr(CTA_USE, be32(0)),
               attr(CTA_MARK, be32(0)), attr(CTA_ID, be32(0)), attr(CTA_MARK, be32(0))});
  const auto entry = parseConntrackMessage(bytes);
  ASSERT_FALSE(entry);
  EXPECT_EQ(entry.error().code, ErrorCode::kDecode);
}

TEST(ConntrackMessageTest, RejectsAttributeShorterThanItsHeader) {
  auto bytes = kernelUdpV4Message();
  bytes[20] = std::byte{2};  // nla_len of the first attribute
  bytes[21] = std::byte{0};
  EXPECT_FALSE(parseConntrackMessage(bytes));
}

TEST(ConntrackMessageTest, RejectsMessagesThatAreNotConntrackEntries) {
  auto wrongType = kernelUdpV4Message();
  const uint16_t expectType = (NFNL_SUBSYS_CTNETLINK_EXP << 8) | IPCTNL_MSG_CT_NEW;
  std::memcpy(wrongType.data() + 4, &expectType, 2);
  EXPECT_FALSE(parseConntrackMessage(wrongType));

  const auto error = message(NLMSG_ERROR, 0, hostBytes<int32_t>(-2), {});
  EXPECT_FALSE(parseConntrackMessage(error));

  auto wrongFamily = kernelUdpV4Message();
  wrongFamily[16] = std::byte{AF_BRIDGE};
  EXPECT_FALSE(parseConntrackMessage(wrongFamily));
}

TEST(ConntrackMessageTest, RejectsMissingOrIncompleteTuple) {
  const auto noTuple = message(kCtNew, 0, nfgen(AF_INET), {attr(CTA_ID, be32(1))});
  EXPECT_FALSE(parseConntrackMessage(noTuple));

  const auto noProto = message(kCtNew, 0, nfgen(AF_INET),
                               {nest(CTA_TUPLE_ORIG, {v4TupleIp({1, 2, 3, 4}, {5, 6, 7, 8})})});
  EXPECT_FALSE(parseConntrackMessage(noProto));

  const auto noDst = message(
      kCtNew, 0, nfgen(AF_INET),
      {nest(CTA_TUPLE_ORIG, {nest(CTA_TUPLE_IP, {attr(CTA_IP_V4_SRC, bytesOf({1, 2, 3, 4}))}),
                             portProto(IPPROTO_UDP, 1, 2)})});
  EXPECT_FALSE(parseConntrackMessage(noDst));
}

TEST(ConntrackMessageTest, RejectsAddressesOfTheWrongSizeOrFamily) {
  const auto shortAddress = message(
      kCtNew, 0, nfgen(AF_INET),
      {nest(CTA_TUPLE_ORIG, {nest(CTA_TUPLE_IP, {attr(CTA_IP_V4_SRC, bytesOf({1, 2, 3})),
                                                 attr(CTA_IP_V4_DST, bytesOf({1, 2, 3, 4}))}),
                             portProto(IPPROTO_UDP, 1, 2)})});
  EXPECT_FALSE(parseConntrackMessage(shortAddress));

  // IPv4 addresses inside an AF_INET6 message.
  const auto mixed = message(kCtNew, 0, nfgen(AF_INET6),
                             {nest(CTA_TUPLE_ORIG, {v4TupleIp({1, 2, 3, 4}, {5, 6, 7, 8}),
                                                    portProto(IPPROTO_UDP, 1, 2)})});
  EXPECT_FALSE(parseConntrackMessage(mixed));
}

TEST(ConntrackMessageTest, RejectsPortsAndIdsOfTheWrongSize) {
  const auto widePort = message(
      kCtNew, 0, nfgen(AF_INET),
      {nest(CTA_TUPLE_ORIG, {v4TupleIp({1, 2, 3, 4}, {5, 6, 7, 8}),
                             nest(CTA_TUPLE_PROTO, {attr(CTA_PROTO_NUM, bytesOf({17})),
                                                    attr(CTA_PROTO_DST_PORT, be32(53))})})});
  EXPECT_FALSE(parseConntrackMessage(widePort));

  const auto shortId = message(
      kCtNew, 0, nfgen(AF_INET),
      {nest(CTA_TUPLE_ORIG, {v4TupleIp({1, 2, 3, 4}, {5, 6, 7, 8}), portProto(IPPROTO_UDP, 1, 2)}),
       attr(CTA_ID, be16(1))});
  EXPECT_FALSE(parseConntrackMessage(shortId));
}

TEST(ConntrackMessageTest, SurvivesRandomGarbageAndMutations) {
  std::mt19937 random(20240611);  // fixed seed: failures must reproduce
  std::uniform_int_distribution<int> byte(0, 255);
  for (int round = 0; round < 2000; ++round) {
    ByteVector garbage(static_cast<size_t>(random() % 160));
    for (auto& b : garbage) b = static_cast<std::byte>(byte(random));
    if (garbage.size() >= 4) {  // make the length field plausible half of the time
      const uint32_t len = static_cast<uint32_t>(garbage.size());
      if (round % 2 == 0) std::memcpy(garbage.data(), &len, 4);
    }
    (void)parseConntrackMessage(garbage);
  }
  const auto valid = kernelUdpV4Message();
  for (int round = 0; round < 5000; ++round) {
    ByteVector mutated = valid;
    for (int flips = 1 + static_cast<int>(random() % 4); flips > 0; --flips) {
      mutated[4 + random() % (mutated.size() - 4)] = static_cast<std::byte>(byte(random));
    }
    const auto entry = parseConntrackMessage(mutated);
    if (entry) {
      EXPECT_FALSE(entry->rawOrigTuple.empty());
      EXPECT_TRUE(buildConntrackDelete(*entry)) << "a parsed entry must always be deletable";
    }
  }
}

// --- Delete requests

TEST(ConntrackMessageTest, DeleteRequestCarriesExactlyTheParsedTuple) {
  const auto bytes = kernelUdpV4Message();
  auto entry = parseConntrackMessage(bytes);
  ASSERT_TRUE(entry);
  auto request = buildConntrackDelete(*entry);
  ASSERT_TRUE(request) << request.error().message;

  const nlmsghdr header = headerOf(*request);
  EXPECT_EQ(header.nlmsg_len, request->size());
  EXPECT_EQ(header.nlmsg_type, 0x0102);  // ctnetlink << 8 | CT_DELETE
  EXPECT_EQ(header.nlmsg_flags, NLM_F_REQUEST | NLM_F_ACK);
  EXPECT_EQ(ByteVector(request->begin() + 16, request->begin() + 20),
            bytesOf({AF_INET, NFNETLINK_V0, 0, 0}));

  // First attribute: CTA_TUPLE_ORIG, nested, with the kernel's bytes unchanged.
  uint16_t firstType = 0;
  std::memcpy(&firstType, request->data() + 22, 2);
  EXPECT_EQ(firstType, CTA_TUPLE_ORIG | NLA_F_NESTED);
  EXPECT_EQ(findAttribute(*request, 20, CTA_TUPLE_ORIG), findAttribute(bytes, 20, CTA_TUPLE_ORIG));
  EXPECT_EQ(findAttribute(*request, 20, CTA_ZONE), be16(7));
  EXPECT_EQ(findAttribute(*request, 20, CTA_ID), be32(0xdeadbeef));
  // Nothing that would turn the delete into a flush or an update.
  EXPECT_TRUE(findAttribute(*request, 20, CTA_FILTER).empty());
  EXPECT_TRUE(findAttribute(*request, 20, CTA_TUPLE_REPLY).empty());
  EXPECT_TRUE(findAttribute(*request, 20, CTA_STATUS).empty());
}

TEST(ConntrackMessageTest, DeleteRequestParsesBackToTheSameEntry) {
  for (const auto& bytes : {kernelUdpV4Message(), kernelUdpV6Message()}) {
    auto entry = parseConntrackMessage(bytes);
    ASSERT_TRUE(entry);
    auto request = buildConntrackDelete(*entry);
    ASSERT_TRUE(request);
    auto back = parseConntrackMessage(*request);
    ASSERT_TRUE(back) << back.error().message;
    EXPECT_EQ(back->family(), entry->family());
    EXPECT_EQ(back->describe(), entry->describe());
    EXPECT_EQ(back->rawOrigTuple, entry->rawOrigTuple);
    EXPECT_EQ(back->zone, entry->zone);
    EXPECT_EQ(back->id, entry->id);
  }
}

TEST(ConntrackMessageTest, DeleteOmitsZoneAndIdTheDumpDidNotHave) {
  auto entry = parseConntrackMessage(kernelUdpV6Message());
  ASSERT_TRUE(entry);
  entry->id.reset();
  auto request = buildConntrackDelete(*entry);
  ASSERT_TRUE(request);
  EXPECT_EQ(std::to_integer<int>((*request)[16]), AF_INET6);
  EXPECT_TRUE(findAttribute(*request, 20, CTA_ZONE).empty());
  EXPECT_TRUE(findAttribute(*request, 20, CTA_ID).empty());
}

TEST(ConntrackMessageTest, DeleteRefusesAnEntryWithoutAFullTuple) {
  // Without CTA_TUPLE_ORIG the kernel would flush the whole table: never build that.
  ConntrackEntry empty;
  empty.l4proto = IPPROTO_UDP;
  auto request = buildConntrackDelete(empty);
  ASSERT_FALSE(request);
  EXPECT_EQ(request.error().code, ErrorCode::kInvalidArgument);

  auto entry = parseConntrackMessage(kernelUdpV4Message());
  ASSERT_TRUE(entry);
  ConntrackEntry noProto = *entry;
  noProto.rawOrigTuple = v4TupleIp({10, 0, 0, 1}, {10, 0, 0, 2});
  EXPECT_FALSE(buildConntrackDelete(noProto));
}

TEST(ConntrackMessageTest, DeleteRefusesFieldsThatDisagreeWithTheRawTuple) {
  auto entry = parseConntrackMessage(kernelUdpV4Message());
  ASSERT_TRUE(entry);
  ConntrackEntry edited = *entry;
  edited.origDstPort = 54;
  EXPECT_FALSE(buildConntrackDelete(edited));
  // The same addresses as IPv6 (v4-mapped): the raw IPv4 tuple is then of the other family.
  edited = *entry;
  edited.origSrc = *IpAddress::parse("::ffff:10.0.0.1");
  edited.origDst = *IpAddress::parse("::ffff:10.0.0.2");
  ASSERT_EQ(edited.family(), Family::kIPv6);
  auto refused = buildConntrackDelete(edited);
  ASSERT_FALSE(refused);
  EXPECT_NE(refused.error().message.find("address of the wrong family"), std::string::npos)
      << refused.error().message;
  // Addresses of two families: the tuple matches neither.
  edited = *entry;
  edited.origDst = *IpAddress::parse("::ffff:10.0.0.2");
  EXPECT_FALSE(buildConntrackDelete(edited));
}

}  // namespace
}  // namespace hostport::hostnet
