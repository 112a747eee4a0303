// The netlink element fast path (nft/kernel/element_table.h) and NetlinkSocket::requestBatch
// against the real kernel, each test in a network namespace of its own thread
// (test::inPrivateNetns).

#include <arpa/inet.h>
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <linux/netfilter/nfnetlink.h>
#include <sys/utsname.h>

#include <cstring>

#include "nft/kernel/element_table.h"
#include "nft/kernel/nft_ruleset.h"
#include "tests/support/netns.h"
#include "tests/support/result_assertions.h"

namespace hostport::nft::kernel {
namespace {

IpAddress ip(const char* text) { return *IpAddress::parse(text); }

class ElementTableTest : public ::testing::Test {
 protected:
  void SetUp() override { HOSTPORT_SKIP_UNLESS_ROOT(); }

  static ElementTable table() {
    auto opened = ElementTable::open();
    EXPECT_OK(opened);
    return std::move(*opened);
  }

  static void layOut() {
    auto ruleset = NftRuleset::create();
    ASSERT_TRUE(ruleset);
    ASSERT_TRUE((*ruleset)->ensureTables());
  }

  static SetElement forward(uint16_t port, const std::string& owner) {
    const std::string podIp =
        "10.88." + std::to_string(port / 250 % 250) + "." + std::to_string(port % 250 + 1);
    return elementOf(Forward{Protocol::kTcp, std::nullopt, port, ip(podIp.c_str()), 80, ""}, owner);
  }
};

TEST_F(ElementTableTest, AddingToAMissingTableIsNotFound) {
  ASSERT_OK(test::inPrivateNetns([] {
    auto elements = table();
    auto added = elements.change(ElementChange::kAdd, {forward(8080, "a/eth0")});
    ASSERT_FALSE(added);
    EXPECT_TRUE(isNotFound(added.error())) << added.error().message;
    auto state = elements.read();  // and a missing table reads as empty, not as an error
    ASSERT_OK(state);
    EXPECT_TRUE(state->empty());
  }));
}

TEST_F(ElementTableTest, SameElementTwiceIsFineOtherDataIsAlreadyExists) {
  ASSERT_OK(test::inPrivateNetns([] {
    ASSERT_NO_FATAL_FAILURE(layOut());
    auto elements = table();
    ASSERT_TRUE(elements.change(ElementChange::kAdd, {forward(8080, "a/eth0")}));
    EXPECT_TRUE(elements.change(ElementChange::kAdd, {forward(8080, "a/eth0")}));
    SetElement other = forward(8080, "b/eth0");
    other.data = forward(8081, "b/eth0").data;  // the same key toward another pod
    auto clash = elements.change(ElementChange::kAdd, {forward(9000, "b/eth0"), other});
    ASSERT_FALSE(clash);
    EXPECT_TRUE(isAlreadyExists(clash.error())) << clash.error().message;
    EXPECT_EQ(elements.read()->forwards.size(), 1u);  // 9000 went down with the batch

    // A missing element: no error where the kernel knows DESTROYSETELEM, NotFound before it.
    auto gone = elements.change(ElementChange::kDelete, {forward(7000, "a/eth0")});
    utsname name{};
    ASSERT_EQ(uname(&name), 0);
    if (releaseHasDestroy(name.release)) {
      EXPECT_OK(gone);
    } else {
      ASSERT_FALSE(gone);
      EXPECT_TRUE(isNotFound(gone.error())) << gone.error().message;
    }
  }));
}

// The agent's DEL (Ruleset::removeExact) deletes the planned elements by key: the same bytes as
// the add, masquerades and an interval element of the pod subnets included, must be found
// without a listing.
TEST_F(ElementTableTest, WhatWasAddedIsDeletedByTheSameKeys) {
  ASSERT_OK(test::inPrivateNetns([] {
    ASSERT_NO_FATAL_FAILURE(layOut());
    auto elements = table();
    const std::string owner = "a/eth0";
    const std::vector<SetElement> planned = {
        forward(8080, owner), elementOf(Masquerade{ip("10.88.0.5")}, owner),
        elementOf(Masquerade{ip("10.88.0.6"), MasqueradeScope::kEverySource}, owner),
        podSubnetElement(*IpPrefix::parse("10.88.0.0/16"))};
    ASSERT_OK(elements.change(ElementChange::kAdd, planned));
    ASSERT_OK(elements.change(ElementChange::kDelete, planned));
    EXPECT_TRUE(elements.read()->empty());
  }));
}

// A refused transaction costs the node an RCU grace period under the commit mutex (the kernel's
// abort): a removal must not be refused because an element is already gone (a flushed map, a
// masquerade another pod's DEL took). Where the kernel knows DESTROYSETELEM, the removal commits:
// the present element goes, the missing one is skipped, and the generation moves (an abort
// leaves it where it was).
TEST_F(ElementTableTest, ARemovalOfElementsPartlyGoneCommitsInsteadOfAborting) {
  utsname name{};
  ASSERT_EQ(uname(&name), 0);
  if (!releaseHasDestroy(name.release)) {
    GTEST_SKIP() << "kernel " << name.release << " predates NFT_MSG_DESTROYSETELEM (6.3)";
  }
  ASSERT_OK(test::inPrivateNetns([] {
    ASSERT_NO_FATAL_FAILURE(layOut());
    auto elements = table();
    const std::vector<SetElement> planned = {forward(8080, "a/eth0"), forward(8081, "a/eth0")};
    ASSERT_OK(elements.change(ElementChange::kAdd, planned));
    ASSERT_OK(elements.change(ElementChange::kDelete, {planned[1]}));
    ASSERT_OK_AND_ASSIGN(const uint32_t before, elements.generation());

    ASSERT_OK(elements.change(ElementChange::kDelete, planned));

    EXPECT_TRUE(elements.read()->empty());
    EXPECT_NE(*elements.generation(), before) << "the removal aborted instead of committing";
  }));
  // A missing table is still NotFound (the callers read it as nothing to remove).
  ASSERT_OK(test::inPrivateNetns([] {
    auto elements = table();
    auto removed = elements.change(ElementChange::kDelete, {forward(8080, "a/eth0")});
    ASSERT_FALSE(removed);
    EXPECT_TRUE(isNotFound(removed.error())) << removed.error().message;
  }));
}

// A look-up by key finds the element as the kernel holds it, whoever owns it, and leaves out
// keys nobody holds; removeIfOwned deletes only what carries its owner.
TEST_F(ElementTableTest, LooksElementsUpByKeyAndRemovesOnlyTheOwners) {
  ASSERT_OK(test::inPrivateNetns([] {
    ASSERT_NO_FATAL_FAILURE(layOut());
    auto elements = table();
    const SetElement ours = forward(8080, "a/eth0");
    const SetElement theirs = forward(9090, "b/eth0");
    const SetElement masquerade = elementOf(Masquerade{ip("10.88.0.5")}, "a/eth0");
    ASSERT_OK(elements.change(ElementChange::kAdd, {ours, theirs, masquerade}));

    ASSERT_OK_AND_ASSIGN(auto found, elements.lookUp({forward(9090, "a/eth0"), ours,
                                                      forward(7070, "a/eth0"), masquerade}));
    EXPECT_THAT(found, ::testing::ElementsAre(theirs, ours, masquerade));

    ASSERT_OK_AND_ASSIGN(auto ruleset, NftRuleset::create());
    const AttachmentRules planned{
        "a/eth0",
        {forwardOf(ours)->forward, forwardOf(forward(9090, "a/eth0"))->forward},
        {Masquerade{ip("10.88.0.5")}}};
    ASSERT_OK_AND_ASSIGN(const auto removed, ruleset->removeIfOwned(planned));
    EXPECT_EQ(removed.forwards.size(), 1u);
    EXPECT_EQ(removed.masquerades.size(), 1u);
    ASSERT_OK_AND_ASSIGN(auto left, elements.read());
    ASSERT_EQ(left.forwards.size(), 1u);
    EXPECT_EQ(left.forwards.front().owner, "b/eth0") << "another owner's key stays";
    EXPECT_TRUE(left.masquerades.empty());
  }));
}

// A reply nobody waits for (what a request abandoned midway leaves behind) puts the socket out
// of step: the request that meets it fails and poisons the socket. The table takes a fresh socket
// for the next request instead of failing every request after it until the agent restarts.
TEST_F(ElementTableTest, AStaleReplyFailsOneRequestAndTheNextGetsAFreshSocket) {
  ASSERT_OK(test::inPrivateNetns([] {
    ASSERT_NO_FATAL_FAILURE(layOut());
    ASSERT_OK_AND_ASSIGN(auto socket, netlink::NetlinkSocket::open(NETLINK_NETFILTER));
    ByteString stray = generationRequest();
    nlmsghdr header{};
    std::memcpy(&header, stray.data(), sizeof header);
    header.nlmsg_flags |= NLM_F_REQUEST | NLM_F_ACK;
    header.nlmsg_seq = 4242;
    std::memcpy(stray.data(), &header, sizeof header);
    sockaddr_nl kernel{};
    kernel.nl_family = AF_NETLINK;
    ASSERT_EQ(sendto(socket.fd(), stray.data(), stray.size(), 0,
                     reinterpret_cast<const sockaddr*>(&kernel), sizeof kernel),
              static_cast<ssize_t>(stray.size()));
    auto elements = ElementTable::over(std::move(socket));

    EXPECT_FALSE(elements.generation().has_value()) << "the stray reply went unnoticed";
    EXPECT_OK(elements.generation());
    EXPECT_OK(elements.change(ElementChange::kAdd, {forward(8080, "a/eth0")}));
  }));
}

// The reconciler skips a compare when the generation has not moved: it must move with every
// committed change, ours or anyone's, and stay put otherwise.
TEST_F(ElementTableTest, TheGenerationMovesWithEveryCommitAndOnlyThen) {
  ASSERT_OK(test::inPrivateNetns([] {
    ASSERT_NO_FATAL_FAILURE(layOut());
    auto elements = table();
    ASSERT_OK_AND_ASSIGN(const uint32_t before, elements.generation());
    ASSERT_OK_AND_ASSIGN(const uint32_t again, elements.generation());
    EXPECT_EQ(again, before) << "reading it changes nothing";
    (void)elements.read();
    EXPECT_EQ(*elements.generation(), before) << "nor does a dump";

    ASSERT_OK(elements.change(ElementChange::kAdd, {forward(8080, "a/eth0")}));
    ASSERT_OK_AND_ASSIGN(const uint32_t afterAdd, elements.generation());
    EXPECT_NE(afterAdd, before);
    auto nft = NftContext::create();
    ASSERT_OK(nft);
    ASSERT_OK(nft->run("add table ip someone_else"));  // another table: still a commit
    EXPECT_NE(*elements.generation(), afterAdd);
  }));
}

TEST_F(ElementTableTest, ReadsDumpsThatSpanManyMessagesAndFiltersByOwner) {
  ASSERT_OK(test::inPrivateNetns([] {
    ASSERT_NO_FATAL_FAILURE(layOut());
    auto elements = table();
    // Thousands of elements: the kernel splits the dump over many replies and reads.
    std::vector<SetElement> batch;
    for (uint16_t port = 10000; port < 13000; ++port) {
      batch.push_back(forward(port, port % 1000 == 7 ? "x/eth0" : "c" + std::to_string(port)));
    }
    ASSERT_TRUE(elements.change(ElementChange::kAdd, batch));
    auto all = elements.read();
    ASSERT_OK(all);
    EXPECT_EQ(all->forwards.size(), 3000u);
    const std::string owner = "x/eth0";
    auto mine = elements.read(&owner);
    ASSERT_TRUE(mine);
    ASSERT_EQ(mine->forwards.size(), 3u);
    for (const auto& installed : mine->forwards) {
      EXPECT_EQ(installed.owner, owner);
      EXPECT_EQ(installed.forward.hostPort % 1000, 7);
    }
  }));
}

TEST_F(ElementTableTest, ABatchTheKernelRefusesWholeFailsAtOnceAndTheSocketStaysUsable) {
  ASSERT_OK(test::inPrivateNetns([] {
    ASSERT_NO_FATAL_FAILURE(layOut());
    auto socket = netlink::NetlinkSocket::open(NETLINK_NETFILTER, std::chrono::seconds(2));
    ASSERT_TRUE(socket);
    ByteString batch = elementBatch(ElementChange::kAdd, {forward(8080, "a/eth0")});
    // BEGIN names no subsystem the kernel knows: it refuses the batch with one error
    // addressed to BEGIN, and never answers the element message that asked for an ACK.
    const uint16_t unknown = htons(NFNL_SUBSYS_COUNT + 7);
    std::memcpy(batch.data() + NLMSG_HDRLEN + offsetof(nfgenmsg, res_id), &unknown,
                sizeof(unknown));
    const auto started = std::chrono::steady_clock::now();
    auto refused = socket->requestBatch(batch, "a refused batch");
    EXPECT_FALSE(refused);
    EXPECT_LT(std::chrono::steady_clock::now() - started, std::chrono::seconds(1))
        << "waited for a reply that never comes";

    ByteString good = elementBatch(ElementChange::kAdd, {forward(8080, "a/eth0")});
    auto accepted = socket->requestBatch(good, "a good batch");
    EXPECT_OK(accepted);
  }));
}

}  // namespace
}  // namespace hostport::nft::kernel
