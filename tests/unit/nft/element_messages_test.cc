#include "nft/element_messages.h"

#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <linux/netfilter/nf_tables.h>
#include <linux/netfilter/nfnetlink.h>
#include <linux/netlink.h>

#include <algorithm>
#include <cstring>

#include "nft/table_layout.h"
#include "tests/unit/netlink/guarded_bytes.h"
#include "tests/unit/netlink/netlink_test_bytes.h"

namespace hostport::nft {
namespace {

using test::attr;
using test::ByteVector;
using test::headerOf;
using test::message;

IpAddress ip(const char* text) { return *IpAddress::parse(text); }
IpPrefix prefix(const char* text) { return *IpPrefix::parse(text); }

/// The messages of a batch, each as its own bytes.
std::vector<ByteString> split(const ByteString& batch) {
  std::vector<ByteString> messages;
  for (size_t offset = 0; offset < batch.size();) {
    nlmsghdr header;
    std::memcpy(&header, batch.data() + offset, sizeof(header));
    EXPECT_GE(header.nlmsg_len, NLMSG_HDRLEN);
    EXPECT_LE(offset + header.nlmsg_len, batch.size());
    messages.emplace_back(batch.begin() + offset, batch.begin() + offset + header.nlmsg_len);
    offset += NLMSG_ALIGN(header.nlmsg_len);
  }
  return messages;
}

std::vector<SetElement> sample() {
  return {
      elementOf(Forward{Protocol::kTcp, std::nullopt, 8080, ip("10.88.0.5"), 80, ""}, "a/eth0"),
      elementOf(Forward{Protocol::kUdp, std::nullopt, 8081, ip("10.88.0.5"), 81, ""}, "a/eth0"),
      elementOf(Forward{Protocol::kTcp, ip("192.0.2.1"), 8080, ip("10.88.0.5"), 80, ""}, "a/eth0"),
      elementOf(Forward{Protocol::kTcp, std::nullopt, 8080, ip("fd00::5"), 80, ""}, "a/eth0"),
      podSubnetElement(prefix("10.88.0.0/16")),
  };
}

TEST(ElementMessagesTest, AddBatchIsOneTransactionWithOneAckedMessagePerSet) {
  const auto messages = split(elementBatch(ElementChange::kAdd, sample()));
  ASSERT_EQ(messages.size(), 6u);  // BEGIN, ip ports, ip ipports, ip podnets, ip6 ports, END
  EXPECT_EQ(headerOf(messages.front()).nlmsg_type, NFNL_MSG_BATCH_BEGIN);
  EXPECT_EQ(headerOf(messages.back()).nlmsg_type, NFNL_MSG_BATCH_END);
  nfgenmsg begin;
  std::memcpy(&begin, messages.front().data() + NLMSG_HDRLEN, sizeof(begin));
  EXPECT_EQ(ntohs(begin.res_id), NFNL_SUBSYS_NFTABLES);
  EXPECT_FALSE(headerOf(messages.front()).nlmsg_flags & NLM_F_ACK);

  std::vector<SetElement> back;
  for (size_t i = 1; i + 1 < messages.size(); ++i) {
    const auto header = headerOf(messages[i]);
    EXPECT_EQ(header.nlmsg_type, (NFNL_SUBSYS_NFTABLES << 8) | NFT_MSG_NEWSETELEM);
    EXPECT_TRUE(header.nlmsg_flags & NLM_F_ACK);
    EXPECT_TRUE(header.nlmsg_flags & NLM_F_CREATE);
    EXPECT_FALSE(header.nlmsg_flags & NLM_F_EXCL);  // the same element again is no error
    // A NEWSETELEM request has the layout of a dump reply: our parser reads it back.
    ASSERT_TRUE(parseElementReply(messages[i], back));
  }
  auto expected = sample();
  ASSERT_EQ(back.size(), expected.size());
  for (const auto& element : expected) {
    EXPECT_NE(std::ranges::find(back, element), back.end()) << element.set;
  }
}

TEST(ElementMessagesTest, ManyElementsOfOneSetSpreadOverMessagesThatEachFitAnAttribute) {
  std::vector<SetElement> elements;
  for (int port = 10000; port < 13000; ++port) {
    elements.push_back(elementOf(
        Forward{Protocol::kTcp, std::nullopt, static_cast<uint16_t>(port), ip("fd00::5"), 80, ""},
        std::string(200, 'o') + "/eth0"));
  }
  const auto messages = split(elementBatch(ElementChange::kAdd, elements));
  ASSERT_GT(messages.size(), 3u);
  std::vector<SetElement> back;
  for (size_t i = 1; i + 1 < messages.size(); ++i) {
    EXPECT_LT(messages[i].size(), 65535u);  // every nest length fits its 16 bits
    ASSERT_TRUE(parseElementReply(messages[i], back));
  }
  EXPECT_EQ(back, elements);
}

TEST(ElementMessagesTest, ADestroyBatchIsADeleteBatchOfAnotherType) {
  const auto deletes = split(elementBatch(ElementChange::kDelete, sample()));
  const auto destroys = split(elementBatch(ElementChange::kDestroy, sample()));
  ASSERT_EQ(destroys.size(), deletes.size());
  for (size_t i = 1; i + 1 < destroys.size(); ++i) {
    EXPECT_EQ(headerOf(destroys[i]).nlmsg_type, (NFNL_SUBSYS_NFTABLES << 8) | 30);
    ByteString asDelete = destroys[i];
    const uint16_t type = (NFNL_SUBSYS_NFTABLES << 8) | NFT_MSG_DELSETELEM;
    std::memcpy(asDelete.data() + offsetof(nlmsghdr, nlmsg_type), &type, sizeof(type));
    EXPECT_EQ(asDelete, deletes[i]);
  }
}

TEST(ElementMessagesTest, DeleteBatchCarriesKeysOnly) {
  const auto messages = split(elementBatch(ElementChange::kDelete, sample()));
  ASSERT_EQ(messages.size(), 6u);
  std::vector<SetElement> back;
  for (size_t i = 1; i + 1 < messages.size(); ++i) {
    EXPECT_EQ(headerOf(messages[i]).nlmsg_type, (NFNL_SUBSYS_NFTABLES << 8) | NFT_MSG_DELSETELEM);
    // Same layout as NEWSETELEM apart from the type: patch it to reuse the parser.
    ByteString asNew = messages[i];
    const uint16_t type = (NFNL_SUBSYS_NFTABLES << 8) | NFT_MSG_NEWSETELEM;
    std::memcpy(asNew.data() + offsetof(nlmsghdr, nlmsg_type), &type, sizeof(type));
    ASSERT_TRUE(parseElementReply(asNew, back));
  }
  for (const auto& element : back) {
    EXPECT_FALSE(element.key.empty());
    EXPECT_TRUE(element.data.empty());
    EXPECT_TRUE(element.userdata.empty());
  }
  const auto subnet = std::ranges::find(back, std::string(kPodSubnetsSet), &SetElement::set);
  ASSERT_NE(subnet, back.end());
  EXPECT_FALSE(subnet->keyEnd.empty());  // an interval element is named by both ends
}

TEST(ElementMessagesTest, OwnerFilterSkipsOtherOwners) {
  auto elements = sample();
  elements.push_back(
      elementOf(Forward{Protocol::kTcp, std::nullopt, 9090, ip("10.88.0.6"), 80, ""}, "b/eth0"));
  const auto messages = split(elementBatch(ElementChange::kAdd, elements));
  const std::string owner = "b/eth0";
  std::vector<SetElement> back;
  for (size_t i = 1; i + 1 < messages.size(); ++i) {
    ASSERT_TRUE(parseElementReply(messages[i], back, &owner));
  }
  ASSERT_EQ(back.size(), 1u);
  EXPECT_EQ(back.front(), elements.back());
}

TEST(ElementMessagesTest, MalformedRepliesAreErrors) {
  const auto messages = split(elementBatch(ElementChange::kAdd, sample()));
  std::vector<SetElement> out;
  EXPECT_FALSE(parseElementReply(messages.front(), out));  // BEGIN is not an element reply
  ByteString truncated = messages[1];
  truncated.resize(truncated.size() - 6);  // nlmsg_len now promises more than there is
  EXPECT_FALSE(parseElementReply(truncated, out));
  ByteString badAttribute = messages[1];
  const uint16_t huge = 0xfff0;  // the first attribute's nla_len runs past the message
  std::memcpy(badAttribute.data() + NLMSG_HDRLEN + NLMSG_ALIGN(sizeof(nfgenmsg)), &huge,
              sizeof(huge));
  EXPECT_FALSE(parseElementReply(badAttribute, out));
  EXPECT_FALSE(parseElementReply(ByteString(3), out));
  EXPECT_TRUE(out.empty());
}

// Found by tests/fuzz/nft_reply_fuzzer: an nlmsg_len below the header's 16 bytes made the body
// start past the message, so the parsers read whatever followed it.
TEST(ElementMessagesTest, ALengthShorterThanTheHeaderIsMalformedAndNothingPastItIsRead) {
  /// A bare 16-byte nlmsghdr of nf_tables `type` that claims `length` bytes.
  const auto headerClaiming = [](uint32_t length, int type) {
    ByteVector header = test::hostBytes(length);
    test::append(header,
                 test::hostBytes(static_cast<uint16_t>((NFNL_SUBSYS_NFTABLES << 8) | type)));
    test::append(header, ByteVector(10));  // flags, seq, pid
    return header;
  };
  for (const uint32_t length : {0u, 8u, 15u}) {
    std::vector<SetElement> out;
    // A read past the 16 bytes hits the guard page and crashes the test.
    const test::GuardedBytes elements(headerClaiming(length, NFT_MSG_NEWSETELEM));
    EXPECT_FALSE(parseElementReply(elements.span(), out)) << length;
    const test::GuardedBytes rule(headerClaiming(length, NFT_MSG_NEWRULE));
    EXPECT_FALSE(parseRuleReply(rule.span())) << length;
    const test::GuardedBytes generation(headerClaiming(length, NFT_MSG_NEWGEN));
    EXPECT_FALSE(parseGenerationReply(generation.span())) << length;
    EXPECT_TRUE(out.empty());
  }
}

TEST(ElementMessagesTest, DumpRequestsNameOurTable) {
  const ByteString sets = elementDumpRequest(Family::kIPv6, kPortsMap);
  const auto header = headerOf(sets);
  EXPECT_EQ(header.nlmsg_len, sets.size());
  EXPECT_EQ(header.nlmsg_type, (NFNL_SUBSYS_NFTABLES << 8) | NFT_MSG_GETSETELEM);
  EXPECT_EQ(header.nlmsg_flags & NLM_F_DUMP, NLM_F_DUMP);
  const std::string text(reinterpret_cast<const char*>(sets.data()), sets.size());
  EXPECT_NE(text.find("hostport"), std::string::npos);
  EXPECT_NE(text.find("ports"), std::string::npos);
  const ByteString rules = ruleDumpRequest(Family::kIPv4, kConditionalChain);
  EXPECT_EQ(headerOf(rules).nlmsg_type, (NFNL_SUBSYS_NFTABLES << 8) | NFT_MSG_GETRULE);
}

TEST(ElementMessagesTest, GetRequestLooksUpOneKeyWithoutADump) {
  const SetElement element = elementOf(Masquerade{*IpAddress::parse("10.88.0.5")}, "c/eth0");
  const ByteString request = elementGetRequest(element);
  const auto header = headerOf(request);
  EXPECT_EQ(header.nlmsg_len, request.size());
  EXPECT_EQ(header.nlmsg_type, (NFNL_SUBSYS_NFTABLES << 8) | NFT_MSG_GETSETELEM);
  EXPECT_EQ(header.nlmsg_flags, NLM_F_REQUEST | NLM_F_ACK) << "a look-up, not a dump";
  const std::string text(reinterpret_cast<const char*>(request.data()), request.size());
  EXPECT_NE(text.find("snatpods"), std::string::npos);
  EXPECT_EQ(text.find("c/eth0"), std::string::npos) << "the key alone, not the comment";
  const auto key =
      std::search(request.begin(), request.end(), element.key.begin(), element.key.end());
  EXPECT_NE(key, request.end()) << "the key's bytes";
}

TEST(ElementMessagesTest, ParsesARuleReply) {
  // nlmsghdr, nfgenmsg, NFTA_RULE_HANDLE (be64 = 42), NFTA_RULE_USERDATA (comment "c/eth0").
  ByteString handle(8);
  handle[7] = std::byte{42};
  const ByteVector reply = message(
      (NFNL_SUBSYS_NFTABLES << 8) | NFT_MSG_NEWRULE, 0, ByteVector(sizeof(nfgenmsg)),
      {attr(NFTA_RULE_HANDLE, handle), attr(NFTA_RULE_USERDATA, commentUserdata("c/eth0"))});
  auto rule = parseRuleReply(reply);
  ASSERT_TRUE(rule) << rule.error().message;
  EXPECT_EQ(rule->handle, 42u);
  EXPECT_EQ(rule->comment, "c/eth0");
}

TEST(ElementMessagesTest, AsksForTheGenerationAndReadsItsId) {
  const ByteString request = generationRequest();
  const auto header = headerOf(request);
  EXPECT_EQ(header.nlmsg_type, (NFNL_SUBSYS_NFTABLES << 8) | NFT_MSG_GETGEN);
  EXPECT_EQ(header.nlmsg_len, request.size());
  EXPECT_FALSE(header.nlmsg_flags & NLM_F_DUMP) << "one answer, not a dump";

  const test::ByteVector generic = test::bytesOf({AF_UNSPEC, NFNETLINK_V0, 0, 0});
  const uint16_t newgen = (NFNL_SUBSYS_NFTABLES << 8) | NFT_MSG_NEWGEN;
  auto reply = test::message(newgen, 0, generic,
                             {test::attr(NFTA_GEN_ID, test::be32(0x01020304)),
                              test::attr(NFTA_GEN_PROC_PID, test::be32(77))});
  EXPECT_EQ(parseGenerationReply(reply), 0x01020304u);

  EXPECT_FALSE(parseGenerationReply(
      test::message(newgen, 0, generic, std::initializer_list<test::ByteVector>{})))
      << "a reply without an id";
  EXPECT_FALSE(parseGenerationReply(split(elementBatch(ElementChange::kAdd, sample()))[1]))
      << "another message type";
}

}  // namespace
}  // namespace hostport::nft

namespace hostport::nft {
namespace {

TEST(ReleaseHasDestroyTest, SixThreeAndLaterKnowDestroySetElem) {
  EXPECT_TRUE(releaseHasDestroy("6.18.44-fc-v769"));
  EXPECT_TRUE(releaseHasDestroy("6.3.0"));
  EXPECT_TRUE(releaseHasDestroy("7.0.1-arch1"));
  EXPECT_FALSE(releaseHasDestroy("6.1.0-28-amd64")) << "Debian 12's kernel";
  EXPECT_FALSE(releaseHasDestroy("5.15.0-105-generic"));
  EXPECT_FALSE(releaseHasDestroy("6"));
  EXPECT_FALSE(releaseHasDestroy(""));
  EXPECT_FALSE(releaseHasDestroy("six.three"));
}

}  // namespace
}  // namespace hostport::nft
