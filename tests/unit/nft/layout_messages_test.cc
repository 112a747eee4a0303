#include "nft/layout_messages.h"

#include <gtest/gtest.h>
#include <linux/netfilter/nf_tables.h>
#include <linux/netfilter/nfnetlink.h>
#include <linux/netlink.h>

#include <cstring>
#include <map>
#include <string>

#include "netlink/attributes.h"
#include "nft/element_messages.h"
#include "nft/table_layout.h"
#include "tests/unit/netlink/netlink_test_bytes.h"

// What the layout's bytes must be is checked against nft itself in
// tests/netns/layout_netns_test.cc; here, what it must never do, without root.

namespace hostport::nft {
namespace {

struct Message {
  uint16_t type = 0;
  uint16_t flags = 0;
  std::string table, chain, set;  // the names it carries, where it has them
};

std::vector<Message> messagesOf(const ByteString& batch) {
  std::vector<Message> out;
  for (size_t offset = 0; offset < batch.size();) {
    nlmsghdr header;
    std::memcpy(&header, batch.data() + offset, sizeof(header));
    Message message{header.nlmsg_type, header.nlmsg_flags, {}, {}, {}};
    const auto body = netlink::Bytes(batch).subspan(
        offset + NLMSG_HDRLEN + NLMSG_ALIGN(sizeof(nfgenmsg)),
        header.nlmsg_len - NLMSG_HDRLEN - NLMSG_ALIGN(sizeof(nfgenmsg)));
    const int kind = header.nlmsg_type & 0xff;
    netlink::forEachAttribute(body, [&](uint16_t type, netlink::Bytes payload) {
      const std::string text(reinterpret_cast<const char*>(payload.data()),
                             payload.empty() ? 0 : payload.size() - 1);
      if (type == 1) message.table = text;  // NFTA_*_TABLE is 1 in every message we send
      if (kind == NFT_MSG_NEWCHAIN && type == NFTA_CHAIN_NAME) message.chain = text;
      if ((kind == NFT_MSG_NEWRULE || kind == NFT_MSG_DELRULE) && type == NFTA_RULE_CHAIN) {
        message.chain = text;
      }
      if (kind == NFT_MSG_NEWSET && type == NFTA_SET_NAME) message.set = text;
      if (kind == NFT_MSG_NEWSETELEM && type == NFTA_SET_ELEM_LIST_SET) message.set = text;
      return true;
    });
    out.push_back(message);
    offset += NLMSG_ALIGN(header.nlmsg_len);
  }
  return out;
}

uint16_t nftables(int message) {
  return static_cast<uint16_t>((NFNL_SUBSYS_NFTABLES << 8) | message);
}

TEST(LayoutMessagesTest, IsOneTransactionOfAcknowledgedCreations) {
  const auto messages = messagesOf(layoutBatch());
  ASSERT_GT(messages.size(), 2u);
  EXPECT_EQ(messages.front().type, NFNL_MSG_BATCH_BEGIN);
  EXPECT_EQ(messages.back().type, NFNL_MSG_BATCH_END);
  std::map<uint16_t, int> count;
  for (size_t i = 1; i + 1 < messages.size(); ++i) {
    const Message& message = messages[i];
    ++count[message.type];
    EXPECT_TRUE(message.flags & NLM_F_ACK) << message.type;
    // Creating what exists is no error: a relayout must not fail on a laid-out table.
    EXPECT_FALSE(message.flags & NLM_F_EXCL) << message.type;
    EXPECT_EQ(message.table, "hostport");
  }
  EXPECT_EQ(count[nftables(NFT_MSG_NEWTABLE)], 2);
  EXPECT_EQ(count[nftables(NFT_MSG_NEWSET)], 10);
  EXPECT_EQ(count[nftables(NFT_MSG_NEWCHAIN)], 10);
  EXPECT_EQ(count[nftables(NFT_MSG_DELRULE)], 8);      // four fixed chains flushed per family
  EXPECT_EQ(count[nftables(NFT_MSG_NEWRULE)], 8 + 7);  // IPv6 has no 127.0.0.0/8 rule
  EXPECT_EQ(count.size(), 5u) << "nothing but creations and the fixed chains' flushes";
}

TEST(LayoutMessagesTest, NeverFlushesTheConditionalChainOrTouchesElements) {
  for (const Message& message : messagesOf(layoutBatch())) {
    if (message.type == nftables(NFT_MSG_DELRULE)) {
      EXPECT_NE(message.chain, std::string(kConditionalChain));
      EXPECT_FALSE(message.chain.empty()) << "a DELRULE without a chain flushes the table";
    }
    EXPECT_NE(message.type, nftables(NFT_MSG_DELSETELEM));
    EXPECT_NE(message.type, nftables(NFT_MSG_DELSET));
    EXPECT_NE(message.type, nftables(NFT_MSG_NEWSETELEM));
  }
}

TEST(LayoutMessagesTest, ElementsRideAfterTheLayoutInTheSameTransaction) {
  const auto element =
      elementOf(Forward{Protocol::kTcp, std::nullopt, 8080, *IpAddress::parse("10.88.0.5"), 80, ""},
                "a/eth0");
  const auto messages = messagesOf(layoutBatch({element}));
  ASSERT_GE(messages.size(), 3u);
  EXPECT_EQ(messages.back().type, NFNL_MSG_BATCH_END);
  const Message& added = messages[messages.size() - 2];
  EXPECT_EQ(added.type, nftables(NFT_MSG_NEWSETELEM));
  EXPECT_EQ(added.set, std::string(kPortsMap));
  for (size_t i = 1; i + 2 < messages.size(); ++i) {
    EXPECT_NE(messages[i].type, nftables(NFT_MSG_NEWSETELEM));
  }
}

}  // namespace
}  // namespace hostport::nft
