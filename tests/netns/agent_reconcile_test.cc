// The agent owns the truth: with a real hostport-agent and the real plugin on a simulated node,
// the reconciler heals what someone broke (a flushed map, a deleted element or table), removes
// owner-tagged elements without a lease, releases leases whose sandbox is gone, and never lays
// out again the forwards of a DEL made while it was down.

#include <algorithm>
#include <chrono>
#include <thread>

#include "tests/netns/agent_plugin_fixture.h"
#include "tests/support/wait.h"

namespace hostport::test {
namespace {

using ::testing::Contains;
using ::testing::Eq;
using ::testing::HasSubstr;
using ::testing::IsEmpty;
using ::testing::Not;

class AgentReconcileTest : public AgentPluginTest {
 protected:
  struct Served {
    Pod* pod = nullptr;
    uint16_t port = 0;  // 0: the pod could not be set up (a failure is recorded)
    std::unique_ptr<Server> server;
  };
  /// A pod ADDed through the agent with one dynamic TCP port, answering on it.
  Served servedPod(const std::string& label) {
    Served served;
    served.pod = addAgentPod(label, "web=8080");
    if (served.pod == nullptr) return served;
    served.server = serve(*served.pod, Transport::kTcp, 8080);
    if (served.server == nullptr) return served;
    served.port = grantedPort(*served.pod, "web", PortProtocol::kTcp);
    EXPECT_THAT(tcpRequest(outside(), kNodeIpV4, served.port), RepliesFrom(label + " tcp"));
    return served;
  }

  /// True once outside's connection to the node's `port` is answered by `label`.
  bool answersWithin(std::chrono::milliseconds deadline, uint16_t port, const std::string& label) {
    return waitUntil(
        [&] {
          auto reply = tcpRequest(outside(), kNodeIpV4, port);
          return reply && reply->id == label + " tcp";
        },
        deadline);
  }

  void nft(const std::vector<std::string>& args) {
    std::vector<std::string> argv = {"nft"};
    argv.insert(argv.end(), args.begin(), args.end());
    ASSERT_OK(nodeNetns().exec(argv));
  }
};

// The table's change events make a repair take milliseconds; the periodic pass (default 30 s)
// is only the backstop.
TEST_F(AgentReconcileTest, AFlushedMapADeletedElementAndADeletedTableAreRepairedWithinASecond) {
  ASSERT_NO_FATAL_FAILURE(startAgent());
  const Served a = servedPod("pod-a");
  const Served b = servedPod("pod-b");
  ASSERT_TRUE(a.port != 0 && b.port != 0);
  const uint16_t portA = a.port;
  const uint16_t portB = b.port;

  ASSERT_NO_FATAL_FAILURE(nft({"flush", "map", "ip", "hostport", "ports"}));
  EXPECT_TRUE(answersWithin(std::chrono::milliseconds(1000), portA, "pod-a")) << "flushed map";
  EXPECT_TRUE(answersWithin(std::chrono::milliseconds(1000), portB, "pod-b")) << "flushed map";

  ASSERT_NO_FATAL_FAILURE(nft(
      {"delete", "element", "ip", "hostport", "ports", "{ tcp . " + std::to_string(portA) + " }"}));
  EXPECT_TRUE(answersWithin(std::chrono::milliseconds(1000), portA, "pod-a")) << "deleted element";

  ASSERT_NO_FATAL_FAILURE(nft({"delete", "table", "ip", "hostport"}));
  EXPECT_TRUE(answersWithin(std::chrono::milliseconds(1000), portA, "pod-a")) << "deleted table";
  EXPECT_TRUE(answersWithin(std::chrono::milliseconds(1000), portB, "pod-b")) << "deleted table";
  EXPECT_TRUE(agent_->waitForLog("table.restored")) << agent_->describe();
}

// A compare reads every element, hundreds of ms at 65,535 leases: one that finds the table as the
// leases want it holds no lock a CNI call waits for; one that finds damage compares again under
// the writer's lock and repairs.
TEST_F(AgentReconcileTest, ACompareThatFindsNothingTakesNoLockAndOneThatFindsDamageRepairsUnderIt) {
  ASSERT_NO_FATAL_FAILURE(startAgent(kSmallPool, {"--table-repair-interval", "1"}));
  const Served a = servedPod("pod-a");
  ASSERT_NE(a.port, 0);
  // Anyone's commit moves the generation, so the next periodic pass compares.
  ASSERT_NO_FATAL_FAILURE(nft({"add", "table", "ip", "foreign"}));
  EXPECT_TRUE(waitUntil(
      [&] {
        return agent_->log().find("table.reconciled unchanged=false under_lock=false") !=
               std::string::npos;
      },
      std::chrono::milliseconds(5000)))
      << agent_->describe();

  ASSERT_NO_FATAL_FAILURE(nft({"delete", "element", "ip", "hostport", "ports",
                               "{ tcp . " + std::to_string(a.port) + " }"}));
  EXPECT_TRUE(answersWithin(std::chrono::milliseconds(2000), a.port, "pod-a"));
  EXPECT_TRUE(agent_->waitForLog("under_lock=true layout_repaired=false leases_restored=1"))
      << agent_->describe();
}

TEST_F(AgentReconcileTest, AStrayElementWithOurOwnerTagGoesAndForeignOnesStay) {
  ASSERT_NO_FATAL_FAILURE(startAgent(kSmallPool, {"--table-repair-interval", "1"}));
  const Served a = servedPod("pod-a");
  ASSERT_NE(a.port, 0);
  const uint16_t port = a.port;
  const std::string stray = "deadbeef/eth0";
  ASSERT_NO_FATAL_FAILURE(nft({"add", "element", "ip", "hostport", "ports",
                               "{ tcp . 41019 comment \"" + stray + "\" : 10.99.0.9 . 80 }"}));
  // Not our tag: someone else's element in our map, and someone else's table.
  ASSERT_NO_FATAL_FAILURE(nft({"add", "element", "ip", "hostport", "ports",
                               "{ tcp . 41018 comment \"not an owner\" : 10.99.0.8 . 80 }"}));
  ASSERT_NO_FATAL_FAILURE(nft({"add", "table", "ip", "foreign"}));
  ASSERT_NO_FATAL_FAILURE(nft({"add", "set", "ip", "foreign", "s", "{ type ipv4_addr; }"}));
  ASSERT_NO_FATAL_FAILURE(nft({"add", "element", "ip", "foreign", "s", "{ 192.0.2.1 }"}));

  EXPECT_TRUE(
      waitUntil([&] { return ownedBy(entries(), stray).empty(); }, std::chrono::milliseconds(3000)))
      << agent_->describe();
  EXPECT_THAT(ownedBy(entries(), "not an owner"), Not(IsEmpty()));
  ASSERT_OK_AND_ASSIGN(const std::string foreign,
                       nodeNetns().exec({"nft", "list", "set", "ip", "foreign", "s"}));
  EXPECT_THAT(foreign, HasSubstr("192.0.2.1"));
  EXPECT_THAT(tcpRequest(outside(), kNodeIpV4, port), RepliesFrom("pod-a tcp"));
  EXPECT_TRUE(agent_->waitForLog("table.stray_removed owner=" + stray)) << agent_->describe();
}

// The pod subnet is shared by the pods in it: a deleted one comes back with the hairpin it
// serves, and it goes once the last lease in it is gone (its pods' DELs leave it).
TEST_F(AgentReconcileTest, APodSubnetIsRestoredForItsLeasesAndGoesWithTheLastOfThem) {
  ASSERT_NO_FATAL_FAILURE(startAgent(kSmallPool, {"--table-repair-interval", "1"}));
  const Served a = servedPod("pod-a");
  const Served b = servedPod("pod-b");
  ASSERT_TRUE(a.port != 0 && b.port != 0);
  const NftEntry subnet{"ip", "podnets", std::string(kPodSubnetV4) + " . " + kPodSubnetV4, "", ""};
  const auto hairpinMasqueraded = [&] {
    auto reply = tcpRequest(a.pod->netns, kNodeIpV4, a.port);
    return reply && reply->id == "pod-a tcp" && reply->peer == kPodGatewayV4;
  };
  ASSERT_TRUE(hairpinMasqueraded());

  const std::string key = std::string("{ ") + kPodSubnetV4 + " . " + kPodSubnetV4 + " }";
  ASSERT_NO_FATAL_FAILURE(nft({"delete", "element", "ip", "hostport", "podnets", key}));
  EXPECT_TRUE(waitUntil([&] { return std::ranges::count(entries(), subnet) == 1; },
                        std::chrono::milliseconds(1000)))
      << agent_->describe();
  EXPECT_TRUE(hairpinMasqueraded());
  EXPECT_TRUE(agent_->waitForLog("first=\"pod subnet " + std::string(kPodSubnetV4)))
      << agent_->describe();

  ASSERT_OK_AND_ASSIGN(auto deletedA, node().delPlugin(*a.pod));
  EXPECT_THAT(entries(), Contains(subnet)) << "pod-b is still in it";
  ASSERT_OK_AND_ASSIGN(auto deletedB, node().delPlugin(*b.pod));
  EXPECT_TRUE(waitUntil([&] { return std::ranges::count(entries(), subnet) == 0; },
                        std::chrono::milliseconds(3000)))
      << agent_->describe();
  EXPECT_TRUE(agent_->waitForLog("table.subnets_removed subnets=" + std::string(kPodSubnetV4)))
      << agent_->describe();
}

// Issue 29 item 6: a podnets entry wider than any lease's subnet (0.0.0.0/0, as a forged
// prevResult once put there) masquerades every outside client toward every snat pod. It goes,
// since no lease records it exactly; and when it had stood in for a lease's own subnet, that
// subnet comes back in the same repair.
TEST_F(AgentReconcileTest, APodSubnetNoLeaseRecordsGoesAndOutsideClientsKeepTheirAddress) {
  ASSERT_NO_FATAL_FAILURE(startAgent(kSmallPool, {"--table-repair-interval", "1"}));
  const Served a = servedPod("pod-a");
  ASSERT_NE(a.port, 0);
  const std::string own = std::string(kPodSubnetV4) + " . " + kPodSubnetV4;
  const std::string everything = "0.0.0.0/0 . 0.0.0.0/0";
  const auto podnetsHold = [&](const std::string& value) {
    return std::ranges::any_of(entries(), [&](const NftEntry& entry) {
      return entry.set == "podnets" && entry.key == value;
    });
  };
  const auto peerSeenFrom = [&](const Netns& client) {
    auto reply = tcpRequest(client, kNodeIpV4, a.port);
    return reply ? reply->peer : "no reply: " + reply.error().message;
  };
  ASSERT_TRUE(podnetsHold(own));
  ASSERT_EQ(peerSeenFrom(outside()), kOutsideIpV4);

  ASSERT_NO_FATAL_FAILURE(
      nft({"add", "element", "ip", "hostport", "podnets", "{ " + everything + " }"}));
  EXPECT_TRUE(waitUntil([&] { return !podnetsHold(everything) && podnetsHold(own); },
                        std::chrono::milliseconds(3000)))
      << agent_->describe();
  EXPECT_EQ(peerSeenFrom(outside()), kOutsideIpV4);
  EXPECT_EQ(peerSeenFrom(a.pod->netns), kPodGatewayV4) << "hairpin is still masqueraded";
  EXPECT_TRUE(agent_->waitForLog("table.subnets_removed subnets=0.0.0.0/0")) << agent_->describe();

  // The kernel refuses a subnet nested in one that is there: with the wide one in the lease's
  // place, its own is restored only once the wide one is gone.
  ASSERT_NO_FATAL_FAILURE(nft({"delete element ip hostport podnets { " + own +
                               " }; add element ip hostport podnets { " + everything + " }"}));
  EXPECT_TRUE(waitUntil([&] { return !podnetsHold(everything) && podnetsHold(own); },
                        std::chrono::milliseconds(3000)))
      << agent_->describe();
  EXPECT_EQ(peerSeenFrom(outside()), kOutsideIpV4);
  EXPECT_EQ(peerSeenFrom(a.pod->netns), kPodGatewayV4);
}

// A stray that holds the very key a lease lost (same key, same data, another tag: adding the
// lease's element again would keep the stray's tag) goes before the lease is restored, so the
// restore is not undone by the stray's removal.
TEST_F(AgentReconcileTest, AStrayHoldingALeasesKeyGoesBeforeTheLeaseIsRestored) {
  ASSERT_NO_FATAL_FAILURE(startAgent());
  const Served a = servedPod("pod-a");
  ASSERT_NE(a.port, 0);
  const std::string key = "tcp . " + std::to_string(a.port);
  const std::string stray = "deadbeef/eth0";
  // One transaction: the lease's element is replaced by a stray's with the same data.
  ASSERT_NO_FATAL_FAILURE(
      nft({"delete element ip hostport ports { " + key + " }; add element ip hostport ports { " +
           key + " comment \"" + stray + "\" : " + a.pod->ipv4 + " . 8080 }"}));
  const auto ownerOfKey = [&] {
    for (const auto& entry : entries()) {
      if (entry.set == "ports" && entry.key == key) return entry.comment;
    }
    return std::string("(none)");
  };

  EXPECT_TRUE(
      waitUntil([&] { return ownerOfKey() == a.pod->owner(); }, std::chrono::milliseconds(1000)))
      << ownerOfKey();
  std::this_thread::sleep_for(std::chrono::milliseconds(500));  // a pass that undid it would show
  EXPECT_EQ(ownerOfKey(), a.pod->owner());
  EXPECT_THAT(tcpRequest(outside(), kNodeIpV4, a.port), RepliesFrom("pod-a tcp"));
  EXPECT_TRUE(agent_->waitForLog("table.stray_removed owner=" + stray)) << agent_->describe();
}

// The DEL never comes (the kubelet lost it, the runtime crashed): the sandbox's netns is gone,
// and after the grace the lease and its forwards go.
TEST_F(AgentReconcileTest, ALeaseWhoseNetnsIsGoneIsReleasedAfterTheGrace) {
  ASSERT_NO_FATAL_FAILURE(startAgent(kSmallPool, {"--vanished-grace", "2"}));
  Served a = servedPod("pod-a");
  ASSERT_NE(a.port, 0);
  const std::string owner = a.pod->owner();
  a.server.reset();
  { Netns gone = std::move(a.pod->netns); }  // `ip netns del`, with no DEL

  EXPECT_TRUE(waitUntil([&] { return allLeases().empty(); }, std::chrono::seconds(15)))
      << agent_->describe();
  EXPECT_THAT(ownedBy(entries(), owner), IsEmpty());
  EXPECT_TRUE(agent_->waitForLog("alloc.vanished")) << agent_->describe();
  EXPECT_TRUE(agent_->waitForLog("via=vanished")) << agent_->describe();
}

// The agent is killed, the pod is deleted while it is down (DEL and netns), and the agent comes
// back: the DEL's release note releases the lease, and the forward is not laid out again.
TEST_F(AgentReconcileTest, APodDeletedWhileTheAgentWasDownStaysDeletedAfterItsRestart) {
  ASSERT_NO_FATAL_FAILURE(startAgent());
  Served a = servedPod("pod-a");
  ASSERT_NE(a.port, 0);
  const uint16_t port = a.port;
  const std::string owner = a.pod->owner();

  ASSERT_OK(agent_->kill(SIGKILL));
  ASSERT_OK_AND_ASSIGN(auto deleted, node().delPlugin(*a.pod));
  EXPECT_THAT(deleted, Succeeded());
  EXPECT_THAT(deleted.err, HasSubstr("leaving a release note"));
  EXPECT_THAT(ownedBy(entries(), owner), IsEmpty());
  a.server.reset();
  { Netns gone = std::move(a.pod->netns); }

  ASSERT_OK(agent_->restart());
  EXPECT_THAT(allLeases(), IsEmpty());
  EXPECT_TRUE(agent_->waitForLog("alloc.release_notes_consumed notes=1 released=1"))
      << agent_->describe();
  std::this_thread::sleep_for(std::chrono::milliseconds(300));
  EXPECT_THAT(ownedBy(entries(), owner), IsEmpty()) << "resurrected";
  EXPECT_THAT(tcpRequest(outside(), kNodeIpV4, port), IsUnreachable());
}

// The agent dies after the grant is durable but before its forwards are in the kernel (here: the
// elements are removed while it is down, which leaves the kernel in that same state): at restart
// the reconciler lays them out as the socket starts to serve.
TEST_F(AgentReconcileTest, AGrantWhoseForwardsNeverReachedTheKernelCarriesTrafficAfterRestart) {
  ASSERT_NO_FATAL_FAILURE(startAgent());
  const Served a = servedPod("pod-a");
  ASSERT_NE(a.port, 0);
  const uint16_t port = a.port;
  ASSERT_OK(agent_->kill(SIGKILL));
  ASSERT_NO_FATAL_FAILURE(nft({"flush", "map", "ip", "hostport", "ports"}));
  ASSERT_THAT(tcpRequest(outside(), kNodeIpV4, port), IsUnreachable());

  ASSERT_OK(agent_->restart());
  // The first pass runs as the socket starts to serve, not before it (reconciler.h).
  EXPECT_TRUE(answersWithin(std::chrono::milliseconds(1000), port, "pod-a"));
  EXPECT_TRUE(agent_->waitForLog("table.restored")) << agent_->describe();
}

}  // namespace
}  // namespace hostport::test
