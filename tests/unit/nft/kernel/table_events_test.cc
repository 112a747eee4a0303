// The pure half of nft/kernel/table_events.h: reading nf_tables notifications from hand-built
// bytes, and grouping them into batches closed by NEWGEN. The socket half is tested against the
// real kernel in tests/netns/table_events_netns_test.cc.

#include "nft/kernel/table_events.h"

#include <gtest/gtest.h>
#include <linux/netfilter.h>
#include <linux/netfilter/nf_tables.h>
#include <linux/netfilter/nfnetlink.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <string>
#include <thread>

#include "tests/unit/netlink/netlink_test_bytes.h"

namespace hostport::nft::kernel {
namespace {

using test::append;
using test::attr;
using test::ByteVector;

ByteVector text(const std::string& value) {
  ByteVector out;
  for (const char c : value) out.push_back(static_cast<std::byte>(c));
  out.push_back(std::byte{0});
  return out;
}

/// An nf_tables notification as the kernel multicasts it: nfgenmsg, then attributes.
ByteVector notification(uint16_t type, uint8_t family, std::initializer_list<ByteVector> attrs) {
  const ByteVector generic = test::bytesOf({family, NFNETLINK_V0, 0, 0});
  return test::message(static_cast<uint16_t>((NFNL_SUBSYS_NFTABLES << 8) | type), 0, generic,
                       attrs);
}

ByteVector elementDelete(uint8_t family, const std::string& table, const std::string& set) {
  return notification(
      NFT_MSG_DELSETELEM, family,
      {attr(NFTA_SET_ELEM_LIST_TABLE, text(table)), attr(NFTA_SET_ELEM_LIST_SET, text(set)),
       test::nest(NFTA_SET_ELEM_LIST_ELEMENTS, {})});
}

ByteVector tableDelete(uint8_t family, const std::string& table) {
  return notification(NFT_MSG_DELTABLE, family,
                      {attr(NFTA_TABLE_NAME, text(table)), attr(NFTA_TABLE_FLAGS, test::be32(0))});
}

ByteVector ruleChange(uint16_t type, const std::string& chain) {
  return notification(
      type, NFPROTO_IPV4,
      {attr(NFTA_RULE_TABLE, text("hostport")), attr(NFTA_RULE_CHAIN, text(chain))});
}

ByteVector generation(uint32_t pid) {
  return notification(NFT_MSG_NEWGEN, AF_UNSPEC,
                      {attr(NFTA_GEN_ID, test::be32(7)), attr(NFTA_GEN_PROC_PID, test::be32(pid)),
                       attr(NFTA_GEN_PROC_NAME, text("nft"))});
}

ByteVector datagram(std::initializer_list<ByteVector> messages) {
  ByteVector out;
  for (const auto& message : messages) append(out, message);
  return out;
}

/// The notification's table and object are views into `bytes`: a temporary lives only to the end
/// of the statement (the sanitizer stage found two tests reading its freed bytes afterwards).
TableNotification parsed(const ByteVector& bytes) {
  auto notification = parseTableNotification(bytes);
  EXPECT_TRUE(notification);
  return notification.value_or(TableNotification{});
}

constexpr uint32_t kOurPid = 100;
constexpr uint32_t kTheirPid = 200;
bool oursIsPid100(uint32_t pid) { return pid == kOurPid; }

TEST(TableNotificationTest, ReadsTheFamilyTableAndSetOfAnElementDelete) {
  const ByteVector bytes = elementDelete(NFPROTO_IPV6, "hostport", "ports");
  const auto notification = parsed(bytes);
  EXPECT_EQ(notification.message, NFT_MSG_DELSETELEM);
  EXPECT_EQ(notification.family, NFPROTO_IPV6);
  EXPECT_EQ(notification.table, "hostport");
  EXPECT_EQ(notification.object, "ports");
}

TEST(TableNotificationTest, ReadsTheChainOfARuleAndNoObjectForATable) {
  const ByteVector ruleBytes = ruleChange(NFT_MSG_DELRULE, "hostports");
  const auto rule = parsed(ruleBytes);
  EXPECT_EQ(rule.table, "hostport");
  EXPECT_EQ(rule.object, "hostports");
  const ByteVector tableBytes = tableDelete(NFPROTO_IPV4, "hostport");
  const auto table = parsed(tableBytes);
  EXPECT_EQ(table.message, NFT_MSG_DELTABLE);
  EXPECT_EQ(table.table, "hostport");
  EXPECT_TRUE(table.object.empty());
}

TEST(TableNotificationTest, ReadsTheCommittingThreadOfANewGeneration) {
  const auto notification = parsed(generation(123456));
  EXPECT_EQ(notification.message, NFT_MSG_NEWGEN);
  EXPECT_EQ(notification.pid, 123456u);
}

TEST(TableNotificationTest, RefusesOtherSubsystemsAndMalformedBytes) {
  const ByteVector generic = test::bytesOf({NFPROTO_IPV4, 0, 0, 0});
  EXPECT_FALSE(parseTableNotification(
      test::message((NFNL_SUBSYS_CTNETLINK << 8) | 0, 0, generic, {attr(1, text("hostport"))})));
  ByteVector broken = elementDelete(NFPROTO_IPV4, "hostport", "ports");
  broken[NLMSG_HDRLEN + 4] = std::byte{0xff};  // the first attribute's length runs past the end
  EXPECT_FALSE(parseTableNotification(broken));
  ByteVector cut = elementDelete(NFPROTO_IPV4, "hostport", "ports");
  cut.resize(cut.size() - 4);  // nlmsg_len now claims more than is held
  EXPECT_FALSE(parseTableNotification(cut));
  EXPECT_FALSE(parseTableNotification(test::bytesOf({1, 2, 3})));
}

TEST(TableNotificationTest, ReportsDeletesAndLayoutEditsOfOurIpAndIp6TablesOnly) {
  EXPECT_TRUE(isOurTableChange(parsed(elementDelete(NFPROTO_IPV4, "hostport", "ports"))));
  EXPECT_TRUE(isOurTableChange(parsed(elementDelete(NFPROTO_IPV6, "hostport", "masq"))));
  EXPECT_TRUE(isOurTableChange(parsed(tableDelete(NFPROTO_IPV6, "hostport"))));
  EXPECT_TRUE(isOurTableChange(parsed(ruleChange(NFT_MSG_DELRULE, "hostports"))));
  EXPECT_TRUE(isOurTableChange(parsed(ruleChange(NFT_MSG_NEWRULE, "hostports"))));

  EXPECT_FALSE(isOurTableChange(parsed(elementDelete(NFPROTO_INET, "hostport", "ports"))));
  EXPECT_FALSE(isOurTableChange(parsed(elementDelete(NFPROTO_IPV4, "other", "ports"))));
  EXPECT_FALSE(isOurTableChange(parsed(elementDelete(NFPROTO_IPV4, "hostports", "ports"))));
  EXPECT_FALSE(isOurTableChange(parsed(tableDelete(NFPROTO_IPV4, "hostpor"))));
  const auto added = notification(NFT_MSG_NEWSETELEM, NFPROTO_IPV4,
                                  {attr(NFTA_SET_ELEM_LIST_TABLE, text("hostport")),
                                   attr(NFTA_SET_ELEM_LIST_SET, text("ports"))});
  EXPECT_FALSE(isOurTableChange(parsed(added)));
  EXPECT_FALSE(isOurTableChange(parsed(generation(kTheirPid))));
}

TEST(TableNotificationTest, DescribesAChangeAsNftWouldSayIt) {
  EXPECT_EQ(describeTableChange(parsed(elementDelete(NFPROTO_IPV4, "hostport", "ports"))),
            "delete element ip hostport ports");
  EXPECT_EQ(describeTableChange(parsed(tableDelete(NFPROTO_IPV6, "hostport"))),
            "delete table ip6 hostport");
  EXPECT_EQ(describeTableChange(parsed(ruleChange(NFT_MSG_NEWRULE, "hostports"))),
            "add rule ip hostport hostports");
}

TEST(TableNotificationTest, AThreadOfThisProcessIsOursAndAnotherProcessIsNot) {
  EXPECT_TRUE(isThreadOfThisProcess(static_cast<uint32_t>(::getpid())));
  uint32_t thread = 0;
  bool ownThreadIsOurs = false;
  std::thread other([&] {
    thread = static_cast<uint32_t>(::gettid());
    ownThreadIsOurs = isThreadOfThisProcess(thread);
  });
  other.join();
  EXPECT_NE(thread, static_cast<uint32_t>(::getpid()));
  EXPECT_TRUE(ownThreadIsOurs);

  const pid_t child = ::fork();
  ASSERT_GE(child, 0);
  if (child == 0) ::_exit(0);
  ASSERT_EQ(::waitpid(child, nullptr, 0), child);
  EXPECT_FALSE(isThreadOfThisProcess(static_cast<uint32_t>(child)));
  EXPECT_FALSE(isThreadOfThisProcess(0));
}

TEST(TableChangeBatchesTest, AForeignChangeIsReportedWhenItsGenerationArrives) {
  TableChangeBatches batches(oursIsPid100);
  EXPECT_FALSE(batches.feed(elementDelete(NFPROTO_IPV4, "hostport", "ports")));
  EXPECT_TRUE(batches.pending());
  EXPECT_TRUE(batches.takeChange().empty()) << "reported before its batch was committed";
  EXPECT_TRUE(batches.feed(generation(kTheirPid)));
  EXPECT_FALSE(batches.pending());
  EXPECT_EQ(batches.takeChange(), "delete element ip hostport ports");
  EXPECT_TRUE(batches.takeChange().empty());
}

TEST(TableChangeBatchesTest, OurOwnChangesAreDropped) {
  TableChangeBatches batches(oursIsPid100);
  EXPECT_FALSE(
      batches.feed(datagram({elementDelete(NFPROTO_IPV4, "hostport", "ports"),
                             tableDelete(NFPROTO_IPV4, "hostport"), generation(kOurPid)})));
  EXPECT_FALSE(batches.pending());
  EXPECT_TRUE(batches.takeChange().empty());
}

TEST(TableChangeBatchesTest, EachGenerationClosesItsOwnBatch) {
  TableChangeBatches batches(oursIsPid100);
  EXPECT_TRUE(batches.feed(
      datagram({elementDelete(NFPROTO_IPV4, "hostport", "ports"), generation(kOurPid),
                ruleChange(NFT_MSG_DELRULE, "output"), tableDelete(NFPROTO_IPV4, "hostport"),
                generation(kTheirPid), elementDelete(NFPROTO_IPV6, "hostport", "masq")})));
  EXPECT_EQ(batches.takeChange(), "delete rule ip hostport output");  // the first of its batch
  EXPECT_TRUE(batches.pending());  // the last batch waits for its generation
  EXPECT_FALSE(batches.feed(generation(kOurPid)));
  EXPECT_TRUE(batches.takeChange().empty());
}

TEST(TableChangeBatchesTest, ForeignBatchesThatMissOurTablesReportNothing) {
  TableChangeBatches batches(oursIsPid100);
  EXPECT_FALSE(
      batches.feed(datagram({elementDelete(NFPROTO_IPV4, "other", "ports"),
                             tableDelete(NFPROTO_INET, "hostport"), generation(kTheirPid)})));
  EXPECT_FALSE(batches.feed(generation(kTheirPid)));  // a generation with no change at all
  EXPECT_TRUE(batches.takeChange().empty());
}

TEST(TableChangeBatchesTest, AChangeWhoseGenerationNeverComesCountsAsForeign) {
  TableChangeBatches batches(oursIsPid100);
  batches.feed(tableDelete(NFPROTO_IPV6, "hostport"));
  const uint64_t closed = batches.closed();
  batches.expirePending();
  EXPECT_FALSE(batches.pending());
  EXPECT_EQ(batches.closed(), closed + 1);
  EXPECT_EQ(batches.takeChange(), "delete table ip6 hostport");
}

TEST(TableChangeBatchesTest, ResetForgetsAHalfReadBatch) {
  TableChangeBatches batches(oursIsPid100);
  batches.feed(tableDelete(NFPROTO_IPV4, "hostport"));
  batches.reset();
  EXPECT_FALSE(batches.pending());
  EXPECT_FALSE(batches.feed(generation(kTheirPid)));
  EXPECT_TRUE(batches.takeChange().empty());
}

}  // namespace
}  // namespace hostport::nft::kernel
