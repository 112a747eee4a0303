// The hostport plugin with a real hostport-agent on a simulated node: the agent runs inside the
// node netns (its own state dir and socket), the plugin runs as a runtime runs it, and traffic
// goes through the granted host ports from the node and from outside it.

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <fstream>
#include <iostream>
#include <latch>
#include <optional>
#include <set>
#include <sstream>
#include <thread>

#include "tests/netns/agent_plugin_fixture.h"

namespace hostport::test {
namespace {

using ::testing::AllOf;
using ::testing::Contains;
using ::testing::Eq;
using ::testing::Ge;
using ::testing::Gt;
using ::testing::HasSubstr;
using ::testing::IsEmpty;
using ::testing::Le;
using ::testing::Not;
using ::testing::Optional;
using ::testing::SizeIs;

TEST_F(AgentPluginTest, DynamicTcpAndUdpPortsReachThePodFromTheNodeAndFromOutside) {
  ASSERT_NO_FATAL_FAILURE(startAgent());
  Pod* pod = addAgentPod("pod-a", "web=8080, dns=53/udp");
  ASSERT_NE(pod, nullptr);
  auto tcp = serve(*pod, Transport::kTcp, 8080);
  auto udp = serve(*pod, Transport::kUdp, 53);
  ASSERT_TRUE(tcp && udp);

  const uint16_t web = grantedPort(*pod, "web", PortProtocol::kTcp);
  const uint16_t dns = grantedPort(*pod, "dns", PortProtocol::kUdp);

  EXPECT_THAT(web, AllOf(Ge(41000), Le(41019)));
  EXPECT_THAT(dns, AllOf(Ge(41000), Le(41019)));
  EXPECT_NE(web, dns);
  const auto owned = ownedBy(entries(), pod->owner());
  EXPECT_THAT(owned, Contains(NftEntry{"ip", "ports", "tcp . " + std::to_string(web),
                                       pod->ipv4 + " . 8080", pod->owner()}));
  EXPECT_THAT(owned, Contains(NftEntry{"ip", "ports", "udp . " + std::to_string(dns),
                                       pod->ipv4 + " . 53", pod->owner()}));
  EXPECT_THAT(tcpRequest(outside(), kNodeIpV4, web), RepliesFrom("pod-a tcp"));
  EXPECT_THAT(tcpRequest(nodeNetns(), kNodeIpV4, web), RepliesFrom("pod-a tcp"));
  EXPECT_THAT(udpRequest(outside(), kNodeIpV4, dns), RepliesFrom("pod-a udp"));
  EXPECT_THAT(udpRequest(nodeNetns(), kNodeIpV4, dns), RepliesFrom("pod-a udp"));
}

TEST_F(AgentPluginTest, TcpudpAndRangeRequestsGetContiguousHostPortsThatAllForward) {
  ASSERT_NO_FATAL_FAILURE(startAgent());
  Pod* pod = addAgentPod("pod-a", "game=7000/tcpudp, rtp=20000-20002/udp");
  ASSERT_NE(pod, nullptr);
  auto gameTcp = serveAs(*pod, Transport::kTcp, 7000, "game tcp");
  auto gameUdp = serveAs(*pod, Transport::kUdp, 7000, "game udp");
  ASSERT_TRUE(gameTcp && gameUdp);
  std::vector<std::unique_ptr<Server>> rtp;
  for (uint16_t i = 0; i < 3; ++i) {
    rtp.push_back(serveAs(*pod, Transport::kUdp, 20000 + i, "rtp " + std::to_string(20000 + i)));
    ASSERT_NE(rtp.back(), nullptr);
  }

  const uint16_t game = grantedPort(*pod, "game", PortProtocol::kTcpUdp);
  const uint16_t first = grantedPort(*pod, "rtp", PortProtocol::kUdp, 3);

  ASSERT_NE(game, 0);
  ASSERT_NE(first, 0);
  EXPECT_THAT(first, AllOf(Ge(41000), Le(41017))) << "the range must fit in the pool";
  EXPECT_TRUE(game < first || game > first + 2) << "game " << game << " inside rtp " << first;
  const auto owned = ownedBy(entries(), pod->owner());
  EXPECT_THAT(owned, Contains(NftEntry{"ip", "ports", "tcp . " + std::to_string(game),
                                       pod->ipv4 + " . 7000", pod->owner()}));
  EXPECT_THAT(owned, Contains(NftEntry{"ip", "ports", "udp . " + std::to_string(game),
                                       pod->ipv4 + " . 7000", pod->owner()}));
  EXPECT_THAT(tcpRequest(outside(), kNodeIpV4, game), RepliesFrom("game tcp"));
  EXPECT_THAT(udpRequest(outside(), kNodeIpV4, game), RepliesFrom("game udp"));
  for (uint16_t i = 0; i < 3; ++i) {
    const std::string id = "rtp " + std::to_string(20000 + i);
    EXPECT_THAT(owned,
                Contains(NftEntry{"ip", "ports", "udp . " + std::to_string(first + i),
                                  pod->ipv4 + " . " + std::to_string(20000 + i), pod->owner()}));
    EXPECT_THAT(udpRequest(outside(), kNodeIpV4, first + i), RepliesFrom(id));
    EXPECT_THAT(udpRequest(nodeNetns(), kNodeIpV4, first + i), RepliesFrom(id));
  }
}

TEST_F(AgentPluginTest, SixtyFourConcurrentAddsGetSixtyFourDistinctPortsEachOwnedByItsAttachment) {
  constexpr int kPods = 64;
  // Exactly 64 ports: every one of them must be handed out once.
  ASSERT_NO_FATAL_FAILURE(startAgent("41000-41063"));
  std::vector<Pod*> pods;
  for (int i = 0; i < kPods; ++i) {
    Pod* pod = bridgedPod("pod-" + std::to_string(i));
    ASSERT_NE(pod, nullptr);
    pods.push_back(pod);
  }
  std::vector<std::string> stdins;
  for (Pod* pod : pods) {
    pod->lastAdd = withAgent("web=8080");
    stdins.push_back(
        node()
            .pluginConfig(pod->lastAdd.cniVersion, pod->lastAdd.pluginKeys, pod->bridgeResult, {})
            .dump());
  }

  std::vector<Result<CommandResult>> results(
      kPods, Result<CommandResult>(fail(ErrorCode::kInternal, "not run")));
  std::latch go(kPods);
  {
    std::vector<std::jthread> threads;
    for (int i = 0; i < kPods; ++i) {
      threads.emplace_back([&, i] {
        go.arrive_and_wait();
        results[i] = node().invokePlugin("ADD", *pods[i], stdins[i]);
      });
    }
  }

  for (int i = 0; i < kPods; ++i) {
    ASSERT_TRUE(results[i].has_value()) << results[i].error().message;
    EXPECT_THAT(*results[i], Succeeded()) << pods[i]->label;
  }
  const auto leases = allLeases();
  EXPECT_THAT(leases, SizeIs(kPods));
  std::set<uint16_t> ports;
  std::set<std::string> owners;
  for (const auto& lease : leases) {
    ASSERT_THAT(lease.ports, SizeIs(1)) << lease.key.str();
    ports.insert(lease.ports[0].hostPort);
    owners.insert(lease.key.str());
  }
  EXPECT_THAT(ports, SizeIs(kPods));
  EXPECT_THAT(*ports.begin(), Ge(41000));
  EXPECT_THAT(*ports.rbegin(), Le(41063));
  std::set<std::string> podOwners;
  for (const Pod* pod : pods) podOwners.insert(pod->owner());
  EXPECT_EQ(owners, podOwners) << "every lease belongs to one of the attachments";

  const auto all = entries();
  std::set<std::string> keys;
  for (const auto& entry : all) {
    if (entry.set == "ports") keys.insert(entry.key);
  }
  EXPECT_THAT(keys, SizeIs(kPods)) << "64 distinct keys in the ports map";
  for (const Pod* pod : pods) {
    const auto lease = leaseOf(*pod);
    ASSERT_TRUE(lease.has_value() && lease->ports.size() == 1) << pod->label;
    const NftEntry expected{"ip", "ports", "tcp . " + std::to_string(lease->ports[0].hostPort),
                            pod->ipv4 + " . 8080", pod->owner()};
    EXPECT_THAT(all, Contains(expected)) << pod->label;
  }
}

TEST_F(AgentPluginTest, PortBusyOnTheHostIsNeverHandedOut) {
  constexpr int kPoolSize = 8;
  ASSERT_NO_FATAL_FAILURE(startAgent("41000-41007"));
  // The lowest port: the default lowest-free strategy would pick it first.
  ASSERT_OK_AND_ASSIGN(UniqueFd listener, holdPortOnHost(nodeNetns(), Transport::kTcp, kPoolFirst));

  for (int i = 1; i < kPoolSize; ++i) {
    ASSERT_NE(addAgentPod("pod-" + std::to_string(i), "web=8080"), nullptr);
  }
  Pod* last = node().createPod("pod-last").value_or(nullptr);
  ASSERT_NE(last, nullptr);
  ASSERT_OK_AND_ASSIGN(auto refused, node().add(*last, withAgent("web=8080")));

  std::set<uint16_t> leased;
  for (const auto& lease : allLeases()) {
    for (const auto& grant : lease.ports) leased.insert(grant.hostPort);
  }
  EXPECT_THAT(leased, SizeIs(kPoolSize - 1));
  EXPECT_FALSE(leased.contains(kPoolFirst)) << "the port a host process listens on was leased";
  EXPECT_THAT(refused, FailsWithCode(kCniPoolExhausted))
      << "the only port left is busy on the host";
  ASSERT_OK_AND_ASSIGN(auto error, parseCniError(refused.out));
  EXPECT_THAT(error.msg, HasSubstr("busy on the host"));
  ASSERT_OK_AND_ASSIGN(const std::string metrics, client().getText("/metrics"));
  EXPECT_THAT(metricValue(metrics, "hostport_conflicts_total{kind=\"host_socket\"}"),
              Optional(Gt(0)))
      << metrics;
  // The agent runs in the node netns: the pool is kept from the node's ephemeral ports there.
  auto reserved = nodeNetns().run([] {
    std::ifstream file("/proc/sys/net/ipv4/ip_local_reserved_ports");
    std::string text;
    std::getline(file, text);
    return text;
  });
  EXPECT_THAT(reserved, Optional(Eq("41000-41007")));
}

TEST_F(AgentPluginTest, StaticClaimOnAPortBusyOnTheHostFailsNamingTheHolderAndLeavesNothing) {
  ASSERT_NO_FATAL_FAILURE(startAgent());
  ASSERT_OK_AND_ASSIGN(UniqueFd listener, holdPortOnHost(nodeNetns(), Transport::kTcp, 8080));
  Pod* pod = node().createPod("pod-a").value_or(nullptr);
  ASSERT_NE(pod, nullptr);
  ASSERT_OK(node().bridgeUp(*pod));
  ASSERT_OK_AND_ASSIGN(const std::string before, rulesetJson(nodeNetns()));

  // A dynamic row in the same request would succeed alone: it must not be leased either.
  ASSERT_OK_AND_ASSIGN(auto added, node().add(*pod, withAgent("web=9000", {{8080, 80, "tcp"}})));

  EXPECT_THAT(added, FailsWithCode(kCniPortConflict));
  ASSERT_OK_AND_ASSIGN(auto error, parseCniError(added.out));
  EXPECT_THAT(error.msg, HasSubstr("tcp/8080"));
  EXPECT_THAT(error.msg, HasSubstr("pid " + std::to_string(::getpid())));
  EXPECT_THAT(error.msg, HasSubstr(ownComm()));
  ASSERT_OK_AND_ASSIGN(const std::string after, rulesetJson(nodeNetns()));
  EXPECT_EQ(rulesetDifference(before, after), "") << "the failed ADD changed nftables";
  EXPECT_THAT(leaseOf(*pod), Eq(std::nullopt));
  EXPECT_THAT(allLeases(), IsEmpty());
  ASSERT_OK_AND_ASSIGN(auto pools, client().poolUsage());
  ASSERT_THAT(pools, SizeIs(1));
  EXPECT_EQ(pools[0].used, 0u) << "the dynamic row of the failed request holds a port";
}

TEST_F(AgentPluginTest, ExhaustedPoolFailsNamingThePoolAndItsSizeWithoutPartialState) {
  ASSERT_NO_FATAL_FAILURE(startAgent("41000-41001"));
  Pod* podA = addAgentPod("pod-a", "web=8080");
  ASSERT_NE(podA, nullptr);
  Pod* podB = addAgentPod("pod-b", "web=8080");
  ASSERT_NE(podB, nullptr);
  auto serverA = serve(*podA, Transport::kTcp, 8080);
  auto serverB = serve(*podB, Transport::kTcp, 8080);
  ASSERT_TRUE(serverA && serverB);
  const auto before = entries();
  Pod* podC = node().createPod("pod-c").value_or(nullptr);
  ASSERT_NE(podC, nullptr);

  ASSERT_OK_AND_ASSIGN(auto refused, node().add(*podC, withAgent("web=8080")));

  EXPECT_THAT(refused, FailsWithCode(kCniPoolExhausted));
  ASSERT_OK_AND_ASSIGN(auto error, parseCniError(refused.out));
  EXPECT_THAT(error.msg, HasSubstr("pool \"default\""));
  EXPECT_THAT(error.msg, HasSubstr("size 2"));
  EXPECT_EQ(entries(), before);
  EXPECT_THAT(ownedBy(entries(), podC->owner()), IsEmpty());
  EXPECT_THAT(leaseOf(*podC), Eq(std::nullopt));
  EXPECT_THAT(allLeases(), SizeIs(2));
  const uint16_t portA = grantedPort(*podA, "web", PortProtocol::kTcp);
  const uint16_t portB = grantedPort(*podB, "web", PortProtocol::kTcp);
  EXPECT_EQ((std::set<uint16_t>{portA, portB}), (std::set<uint16_t>{41000, 41001}));
  EXPECT_THAT(tcpRequest(outside(), kNodeIpV4, portA), RepliesFrom("pod-a tcp"));
  EXPECT_THAT(tcpRequest(outside(), kNodeIpV4, portB), RepliesFrom("pod-b tcp"));

  // The runtime follows the failed ADD with a DEL: it must take nothing from pod-a or pod-b.
  ASSERT_OK_AND_ASSIGN(auto cleanup, node().delPlugin(*podC, {.withPrevResult = false}));
  EXPECT_THAT(cleanup, Succeeded());
  EXPECT_EQ(entries(), before);
  EXPECT_THAT(allLeases(), SizeIs(2));
}

TEST_F(AgentPluginTest, WithTheAgentDownAddFailsToRetryAndDelRemovesTheElementsForGood) {
  ASSERT_NO_FATAL_FAILURE(startAgent());
  Pod* podA = addAgentPod("pod-a", "web=8080");
  ASSERT_NE(podA, nullptr);
  auto server = serve(*podA, Transport::kTcp, 8080);
  ASSERT_NE(server, nullptr);
  const auto leaseBefore = leaseOf(*podA);
  ASSERT_TRUE(leaseBefore.has_value());
  const uint16_t port = leaseBefore->ports.at(0).hostPort;
  ASSERT_THAT(tcpRequest(outside(), kNodeIpV4, port), RepliesFrom("pod-a tcp"));
  const auto before = entries();

  ASSERT_OK_AND_ASSIGN(const std::string ended, agent_->kill(SIGKILL));
  EXPECT_EQ(ended, "killed by signal 9");
  Pod* podB = node().createPod("pod-b").value_or(nullptr);
  ASSERT_NE(podB, nullptr);
  ASSERT_OK_AND_ASSIGN(auto refused, node().add(*podB, withAgent("web=8080")));

  EXPECT_THAT(refused, FailsWithCode(kCniTryAgainLater));
  ASSERT_OK_AND_ASSIGN(auto error, parseCniError(refused.out));
  EXPECT_THAT(error.msg, HasSubstr(agent_->socketPath()));
  EXPECT_EQ(entries(), before) << "an ADD without the agent installed something";

  // By key, from the record ADD kept; and a release note for the agent.
  ASSERT_OK_AND_ASSIGN(auto deleted, node().delPlugin(*podA));
  EXPECT_THAT(deleted, Succeeded());
  EXPECT_THAT(deleted.err, HasSubstr("by key"));
  EXPECT_THAT(withoutPodSubnets(entries()), IsEmpty());
  EXPECT_THAT(tcpRequest(outside(), kNodeIpV4, port), IsUnreachable());

  // The pod's netns is still there, so only the note tells the agent: it releases the lease and
  // never lays the forward out again.
  ASSERT_OK(agent_->restart());
  EXPECT_THAT(leaseOf(*podA), Eq(std::nullopt));
  EXPECT_THAT(leaseOf(*podB), Eq(std::nullopt));
  EXPECT_THAT(allLeases(), IsEmpty());
  EXPECT_TRUE(agent_->waitForLog("via=release_note")) << agent_->describe();
  EXPECT_THAT(entries(), IsEmpty()) << "resurrected";
  EXPECT_THAT(tcpRequest(outside(), kNodeIpV4, port), IsUnreachable());
}

TEST_F(AgentPluginTest, RepeatedAddGetsTheSameLeaseAndCheckPassesAndDelReleasesIt) {
  ASSERT_NO_FATAL_FAILURE(startAgent());
  Pod* pod = addAgentPod("pod-a", "web=8080, dns=53/udp");
  ASSERT_NE(pod, nullptr);
  const auto firstLease = leaseOf(*pod);
  ASSERT_TRUE(firstLease.has_value());
  const auto firstEntries = entries();
  ASSERT_THAT(ownedBy(firstEntries, pod->owner()), Not(IsEmpty()));

  ASSERT_OK_AND_ASSIGN(auto again, node().add(*pod, withAgent("web=8080, dns=53/udp")));

  EXPECT_THAT(again, Succeeded());
  EXPECT_EQ(leaseOf(*pod), firstLease);
  EXPECT_THAT(allLeases(), SizeIs(1));
  EXPECT_EQ(entries(), firstEntries) << "one copy of each element";
  ASSERT_OK_AND_ASSIGN(auto checked, node().check(*pod));
  EXPECT_THAT(checked, Succeeded());

  ASSERT_OK_AND_ASSIGN(auto deleted, node().del(*pod));

  EXPECT_THAT(deleted, Succeeded());
  EXPECT_THAT(allLeases(), IsEmpty());
  EXPECT_THAT(withoutPodSubnets(entries()), IsEmpty());
}

TEST_F(AgentPluginTest, AReleasedPortIsNotGrantedAgainWhileOthersAreFreeButIsWhenItIsTheLast) {
  ASSERT_NO_FATAL_FAILURE(startAgent("41000-41002"));  // the default reuse delay: 30 s
  Pod* first = addAgentPod("pod-a", "web=8080");
  ASSERT_NE(first, nullptr);
  const uint16_t released = grantedPort(*first, "web", PortProtocol::kTcp);
  ASSERT_OK_AND_ASSIGN(auto deleted, node().del(*first));
  ASSERT_THAT(deleted, Succeeded());

  std::set<uint16_t> others;
  for (const char* label : {"pod-b", "pod-c"}) {
    Pod* pod = addAgentPod(label, "web=8080");
    ASSERT_NE(pod, nullptr);
    others.insert(grantedPort(*pod, "web", PortProtocol::kTcp));
  }
  EXPECT_EQ(others.size(), 2u);
  EXPECT_FALSE(others.contains(released)) << "port " << released << " granted again at once";

  // Only the quarantined port is free: quarantine never refuses it, and it forwards.
  Pod* last = addAgentPod("pod-d", "web=8080");
  ASSERT_NE(last, nullptr);
  EXPECT_EQ(grantedPort(*last, "web", PortProtocol::kTcp), released);
  auto server = serve(*last, Transport::kTcp, 8080);
  ASSERT_TRUE(server);
  EXPECT_THAT(tcpRequest(outside(), kNodeIpV4, released), RepliesFrom("pod-d tcp"));
}

TEST_F(AgentPluginTest, StaticHostPortAndDynamicPortInOnePodBothForward) {
  ASSERT_NO_FATAL_FAILURE(startAgent());
  Pod* pod = addAgentPod("pod-a", "dns=53/udp", {{8080, 80, "tcp"}});
  ASSERT_NE(pod, nullptr);
  auto tcp = serve(*pod, Transport::kTcp, 80);
  auto udp = serve(*pod, Transport::kUdp, 53);
  ASSERT_TRUE(tcp && udp);

  const auto lease = leaseOf(*pod);
  ASSERT_TRUE(lease.has_value());
  const auto staticGrant =
      std::ranges::find_if(lease->ports, [](const PortGrant& grant) { return grant.isStatic; });
  ASSERT_NE(staticGrant, lease->ports.end());
  EXPECT_EQ(staticGrant->hostPort, 8080);
  EXPECT_EQ(staticGrant->containerPort, 80);
  const uint16_t dns = grantedPort(*pod, "dns", PortProtocol::kUdp);
  EXPECT_THAT(dns, AllOf(Ge(41000), Le(41019)));

  EXPECT_THAT(tcpRequest(outside(), kNodeIpV4, 8080), RepliesFrom("pod-a tcp"));
  EXPECT_THAT(tcpRequest(nodeNetns(), kNodeIpV4, 8080), RepliesFrom("pod-a tcp"));
  EXPECT_THAT(udpRequest(outside(), kNodeIpV4, dns), RepliesFrom("pod-a udp"));
  EXPECT_THAT(udpRequest(nodeNetns(), kNodeIpV4, dns), RepliesFrom("pod-a udp"));
}

TEST_F(AgentPluginTest, MalformedAnnotationFailsNamingTheBadTokenAndLeavesNothing) {
  ASSERT_NO_FATAL_FAILURE(startAgent());
  Pod* pod = node().createPod("pod-a").value_or(nullptr);
  ASSERT_NE(pod, nullptr);

  ASSERT_OK_AND_ASSIGN(auto added, node().add(*pod, withAgent("web=8080, dns=53/bogus")));

  EXPECT_THAT(added, FailsWithCode(kCniInvalidConfig));
  ASSERT_OK_AND_ASSIGN(auto error, parseCniError(added.out));
  EXPECT_THAT(error.msg, HasSubstr("hostport.io/ports"));
  EXPECT_THAT(error.msg, HasSubstr("dns=53/bogus"));
  EXPECT_THAT(allLeases(), IsEmpty());
  EXPECT_THAT(entries(), IsEmpty());
}

TEST_F(AgentPluginTest, AgentRepairsAChainSomeoneFlushedAndTrafficFlowsAgain) {
  ASSERT_NO_FATAL_FAILURE(startAgent(kSmallPool, {"--table-repair-interval", "1"}));
  EXPECT_TRUE(agent_->waitForLog(
      " info table: table.laid_out tables=ip/hostport,ip6/hostport check_every_s=1\n"))
      << agent_->describe();
  Pod* pod = addAgentPod("pod-a", "web=8080");
  ASSERT_NE(pod, nullptr);
  auto server = serve(*pod, Transport::kTcp, 8080);
  ASSERT_NE(server, nullptr);
  const uint16_t port = grantedPort(*pod, "web", PortProtocol::kTcp);
  ASSERT_THAT(tcpRequest(outside(), kNodeIpV4, port), RepliesFrom("pod-a tcp"));

  // What another tool (or a hand) might do: the ADD path never looks at the chains again.
  ASSERT_OK(nodeNetns().exec({"nft", "flush", "chain", "ip", "hostport", "prerouting"}));
  bool repaired = false;
  for (int attempt = 0; attempt < 50 && !repaired; ++attempt) {
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
    repaired =
        agent_->log().find(" warn table: table.repaired tables=ip/hostport,ip6/hostport\n") !=
        std::string::npos;
  }
  ASSERT_TRUE(repaired) << agent_->describe();
  EXPECT_THAT(tcpRequest(outside(), kNodeIpV4, port), RepliesFrom("pod-a tcp"));
  EXPECT_THAT(ownedBy(entries(), pod->owner()), Not(IsEmpty()));  // elements untouched
}

}  // namespace
}  // namespace hostport::test
