// Real TCP and UDP traffic through the plugin's DNAT on a simulated node (see
// tests/support/cni_node.h for the topology): from a client outside the node, from the node
// itself (its own address and 127.0.0.1), from another pod and from the pod itself (hairpin).

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "tests/support/plugin_fixture.h"

namespace hostport::test {
namespace {

using ::testing::Eq;

constexpr uint16_t kHostPort = 8080;
constexpr uint16_t kContainerPort = 80;
constexpr uint16_t kUdpHostPort = 5353;
constexpr uint16_t kUdpContainerPort = 53;

class PluginTrafficTest : public PluginFixture {
 protected:
  PluginTrafficTest() : PluginFixture(HOSTPORT_PLUGIN_PATH) {}

  /// pod-a with tcp 8080->80 and udp 5353->53 and servers behind both.
  void SetUpPodA(const AddOptions& extra = {}) {
    AddOptions options = extra;
    if (options.mappings.empty()) {
      options.mappings = {{kHostPort, kContainerPort, "tcp"},
                          {kUdpHostPort, kUdpContainerPort, "udp"}};
    }
    podA_ = addPod("pod-a", options);
    ASSERT_NE(podA_, nullptr);
    tcpA_ = serve(*podA_, Transport::kTcp, kContainerPort);
    ASSERT_NE(tcpA_, nullptr);
    udpA_ = serve(*podA_, Transport::kUdp, kUdpContainerPort);
    ASSERT_NE(udpA_, nullptr);
  }

  Pod* podA_ = nullptr;
  std::unique_ptr<Server> tcpA_;
  std::unique_ptr<Server> udpA_;
};

/// conditionsV4 matching `source`: nft syntax for hostport; iptables arguments when the harness
/// runs against the reference portmap (HOSTPORT_TEST_PLUGIN), whose conditions are iptables'.
nlohmann::json sourceCondition(const std::string& pluginPath, const std::string& source) {
  if (pluginPath.ends_with("/portmap")) return {"-s", source};
  return {"ip saddr " + source};
}

class PluginTrafficV6Test : public PluginFixture {
 protected:
  PluginTrafficV6Test() : PluginFixture(HOSTPORT_PLUGIN_PATH, /*ipv6=*/true) {}
};

TEST_F(PluginTrafficTest, ReachesPodThroughHostPortFromOutsideNode) {
  ASSERT_NO_FATAL_FAILURE(SetUpPodA());

  auto reply = tcpRequest(outside(), kNodeIpV4, kHostPort);

  EXPECT_THAT(reply, RepliesFrom("pod-a tcp"));
  // snat only masquerades localhost and pod sources: a remote client keeps its address.
  ASSERT_TRUE(reply.has_value());
  EXPECT_EQ(reply->peer, kOutsideIpV4);
}

TEST_F(PluginTrafficTest, ReachesPodThroughHostPortFromNodeIp) {
  ASSERT_NO_FATAL_FAILURE(SetUpPodA());

  EXPECT_THAT(tcpRequest(nodeNetns(), kNodeIpV4, kHostPort), RepliesFrom("pod-a tcp"));
}

TEST_F(PluginTrafficTest, ReachesPodThroughHostPortFromLocalhost) {
  ASSERT_NO_FATAL_FAILURE(SetUpPodA());

  auto reply = tcpRequest(nodeNetns(), "127.0.0.1", kHostPort);

  EXPECT_THAT(reply, RepliesFrom("pod-a tcp"));
  // 127.0.0.1 cannot leave the node: it must have been masqueraded to the bridge address.
  ASSERT_TRUE(reply.has_value());
  EXPECT_EQ(reply->peer, kPodGatewayV4);
}

TEST_F(PluginTrafficTest, ReachesPodThroughHostPortFromAnotherPod) {
  ASSERT_NO_FATAL_FAILURE(SetUpPodA());
  Pod* podB = addPod("pod-b", {});
  ASSERT_NE(podB, nullptr);

  auto reply = tcpRequest(podB->netns, kNodeIpV4, kHostPort);

  EXPECT_THAT(reply, RepliesFrom("pod-a tcp"));
  ASSERT_TRUE(reply.has_value());
  EXPECT_EQ(reply->peer, kPodGatewayV4) << "a same-bridge source is masqueraded when snat is on";
}

TEST_F(PluginTrafficTest, ReachesItselfThroughHostPortWithHairpin) {
  ASSERT_NO_FATAL_FAILURE(SetUpPodA());

  auto reply = tcpRequest(podA_->netns, kNodeIpV4, kHostPort);

  EXPECT_THAT(reply, RepliesFrom("pod-a tcp"));
  ASSERT_TRUE(reply.has_value());
  EXPECT_EQ(reply->peer, kPodGatewayV4);
}

TEST_F(PluginTrafficTest, ForwardsUdpThroughHostPortFromEverySource) {
  ASSERT_NO_FATAL_FAILURE(SetUpPodA());
  Pod* podB = addPod("pod-b", {});
  ASSERT_NE(podB, nullptr);

  EXPECT_THAT(udpRequest(outside(), kNodeIpV4, kUdpHostPort), RepliesFrom("pod-a udp"));
  EXPECT_THAT(udpRequest(nodeNetns(), kNodeIpV4, kUdpHostPort), RepliesFrom("pod-a udp"));
  EXPECT_THAT(udpRequest(nodeNetns(), "127.0.0.1", kUdpHostPort), RepliesFrom("pod-a udp"));
  EXPECT_THAT(udpRequest(podB->netns, kNodeIpV4, kUdpHostPort), RepliesFrom("pod-a udp"));
  EXPECT_THAT(udpRequest(podA_->netns, kNodeIpV4, kUdpHostPort), RepliesFrom("pod-a udp"));
}

TEST_F(PluginTrafficTest, DoesNotForwardTheTcpPortOverUdpOrTheUdpPortOverTcp) {
  ASSERT_NO_FATAL_FAILURE(SetUpPodA());
  auto udpOnTcpPort = serve(*podA_, Transport::kUdp, kContainerPort);
  ASSERT_NE(udpOnTcpPort, nullptr);
  auto tcpOnUdpPort = serve(*podA_, Transport::kTcp, kUdpContainerPort);
  ASSERT_NE(tcpOnUdpPort, nullptr);

  EXPECT_THAT(udpRequest(outside(), kNodeIpV4, kHostPort), IsUnreachable());
  EXPECT_THAT(tcpRequest(outside(), kNodeIpV4, kUdpHostPort), IsUnreachable());
}

TEST_F(PluginTrafficTest, KeepsEachPodsHostPortsApart) {
  Pod* podA = addPod("pod-a", {.mappings = {{8001, kContainerPort, "tcp"}}});
  ASSERT_NE(podA, nullptr);
  Pod* podB = addPod("pod-b", {.mappings = {{8002, kContainerPort, "tcp"}}});
  ASSERT_NE(podB, nullptr);
  Pod* podC = addPod("pod-c", {.mappings = {{8003, kContainerPort, "tcp"}}});
  ASSERT_NE(podC, nullptr);
  auto serverA = serve(*podA, Transport::kTcp, kContainerPort);
  auto serverB = serve(*podB, Transport::kTcp, kContainerPort);
  auto serverC = serve(*podC, Transport::kTcp, kContainerPort);
  ASSERT_TRUE(serverA && serverB && serverC);

  EXPECT_THAT(tcpRequest(outside(), kNodeIpV4, 8001), RepliesFrom("pod-a tcp"));
  EXPECT_THAT(tcpRequest(outside(), kNodeIpV4, 8002), RepliesFrom("pod-b tcp"));
  EXPECT_THAT(tcpRequest(outside(), kNodeIpV4, 8003), RepliesFrom("pod-c tcp"));
  EXPECT_THAT(tcpRequest(outside(), kNodeIpV4, 8004), IsUnreachable());
}

TEST_F(PluginTrafficTest, HostIpMappingAnswersOnlyOnThatAddress) {
  ASSERT_NO_FATAL_FAILURE(
      SetUpPodA({.mappings = {{kHostPort, kContainerPort, "tcp", kNodeIpV4},
                              {kUdpHostPort, kUdpContainerPort, "udp", kNodeIpV4}}}));

  EXPECT_THAT(tcpRequest(outside(), kNodeIpV4, kHostPort), RepliesFrom("pod-a tcp"));
  EXPECT_THAT(udpRequest(outside(), kNodeIpV4, kUdpHostPort), RepliesFrom("pod-a udp"));
  EXPECT_THAT(tcpRequest(nodeNetns(), kNodeIpV4, kHostPort), RepliesFrom("pod-a tcp"));
  EXPECT_THAT(tcpRequest(outside(), kSecondNodeIpV4, kHostPort), IsUnreachable());
  EXPECT_THAT(udpRequest(outside(), kSecondNodeIpV4, kUdpHostPort), IsUnreachable());
  EXPECT_THAT(tcpRequest(nodeNetns(), kSecondNodeIpV4, kHostPort), IsUnreachable());
}

TEST_F(PluginTrafficTest, TwoPodsShareAHostPortOnDifferentHostIps) {
  Pod* podA = addPod("pod-a", {.mappings = {{kHostPort, kContainerPort, "tcp", kNodeIpV4}}});
  ASSERT_NE(podA, nullptr);
  Pod* podB = addPod("pod-b", {.mappings = {{kHostPort, kContainerPort, "tcp", kSecondNodeIpV4}}});
  ASSERT_NE(podB, nullptr);
  auto serverA = serve(*podA, Transport::kTcp, kContainerPort);
  auto serverB = serve(*podB, Transport::kTcp, kContainerPort);
  ASSERT_TRUE(serverA && serverB);

  EXPECT_THAT(tcpRequest(outside(), kNodeIpV4, kHostPort), RepliesFrom("pod-a tcp"));
  EXPECT_THAT(tcpRequest(outside(), kSecondNodeIpV4, kHostPort), RepliesFrom("pod-b tcp"));
}

TEST_F(PluginTrafficTest, ConditionsV4LimitWhichSourcesAreForwarded) {
  const std::string allowed = kSecondOutsideIpV4;
  ASSERT_NO_FATAL_FAILURE(SetUpPodA(
      {.mappings = {{kHostPort, kContainerPort, "tcp"}, {kUdpHostPort, kUdpContainerPort, "udp"}},
       .pluginKeys = {{"conditionsV4", sourceCondition(pluginPath_, allowed)}}}));

  auto fromAllowed = tcpRequest(outside(), kNodeIpV4, kHostPort, {.source = allowed});
  EXPECT_THAT(fromAllowed, RepliesFrom("pod-a tcp"));
  ASSERT_TRUE(fromAllowed.has_value());
  EXPECT_EQ(fromAllowed->peer, allowed);
  EXPECT_THAT(udpRequest(outside(), kNodeIpV4, kUdpHostPort, {.source = allowed}),
              RepliesFrom("pod-a udp"));
  EXPECT_THAT(tcpRequest(outside(), kNodeIpV4, kHostPort, {.source = kOutsideIpV4}),
              IsUnreachable());
  EXPECT_THAT(udpRequest(outside(), kNodeIpV4, kUdpHostPort, {.source = kOutsideIpV4}),
              IsUnreachable());
}

TEST_F(PluginTrafficTest, MasqAllMakesThePodSeeTheBridgeAddress) {
  ASSERT_NO_FATAL_FAILURE(SetUpPodA({.pluginKeys = {{"masqAll", true}}}));

  auto reply = tcpRequest(outside(), kNodeIpV4, kHostPort);

  EXPECT_THAT(reply, RepliesFrom("pod-a tcp"));
  ASSERT_TRUE(reply.has_value());
  EXPECT_EQ(reply->peer, kPodGatewayV4);
}

TEST_F(PluginTrafficTest, WithoutSnatAnotherPodIsSeenWithItsOwnAddress) {
  ASSERT_NO_FATAL_FAILURE(SetUpPodA({.pluginKeys = {{"snat", false}}}));
  Pod* podB = addPod("pod-b", {});
  ASSERT_NE(podB, nullptr);

  auto fromPod = tcpRequest(podB->netns, kNodeIpV4, kHostPort);
  auto fromOutside = tcpRequest(outside(), kNodeIpV4, kHostPort);

  EXPECT_THAT(fromPod, RepliesFrom("pod-a tcp"));
  ASSERT_TRUE(fromPod.has_value());
  EXPECT_EQ(fromPod->peer, podB->ipv4);
  EXPECT_THAT(fromOutside, RepliesFrom("pod-a tcp"));
}

TEST_F(PluginTrafficTest, StopsForwardingAfterDelWhileThePodStillServes) {
  ASSERT_NO_FATAL_FAILURE(SetUpPodA());
  ASSERT_THAT(tcpRequest(outside(), kNodeIpV4, kHostPort), RepliesFrom("pod-a tcp"));

  ASSERT_OK_AND_ASSIGN(auto deleted, node().delPlugin(*podA_));
  ASSERT_THAT(deleted, Succeeded());

  EXPECT_THAT(tcpRequest(outside(), kNodeIpV4, kHostPort), IsUnreachable());
  EXPECT_THAT(tcpRequest(nodeNetns(), kNodeIpV4, kHostPort), IsUnreachable());
  EXPECT_THAT(tcpRequest(nodeNetns(), "127.0.0.1", kHostPort), IsUnreachable());
  EXPECT_THAT(udpRequest(outside(), kNodeIpV4, kUdpHostPort), IsUnreachable());
  // The pod itself is still up: only the plugin's forwarding is gone.
  EXPECT_THAT(tcpRequest(nodeNetns(), podA_->ipv4, kContainerPort), RepliesFrom("pod-a tcp"));
}

TEST_F(PluginTrafficTest, AddFlushesStaleUdpConntrackForTheHostPort) {
  Pod* pod = node().createPod("pod-a").value_or(nullptr);
  ASSERT_NE(pod, nullptr);
  ASSERT_OK(node().bridgeUp(*pod));
  auto server = serve(*pod, Transport::kUdp, kUdpContainerPort);
  ASSERT_NE(server, nullptr);
  // Before the mapping exists, a datagram to the host port creates a conntrack entry with no
  // DNAT. The same 5-tuple keeps that entry unless ADD flushes it.
  ASSERT_OK_AND_ASSIGN(auto client, UdpClient::create(outside(), kNodeIpV4, kUdpHostPort));
  ASSERT_THAT(client.request(), IsUnreachable());

  ASSERT_OK_AND_ASSIGN(auto added,
                       node().add(*pod, {.mappings = {{kUdpHostPort, kUdpContainerPort, "udp"}}}));
  ASSERT_THAT(added, Succeeded());

  EXPECT_THAT(client.request(), RepliesFrom("pod-a udp"))
      << "from source port " << client.localPort();
}

TEST_F(PluginTrafficTest, DelFlushesUdpConntrackForTheHostPort) {
  ASSERT_NO_FATAL_FAILURE(SetUpPodA());
  ASSERT_OK_AND_ASSIGN(auto client, UdpClient::create(outside(), kNodeIpV4, kUdpHostPort));
  ASSERT_THAT(client.request(), RepliesFrom("pod-a udp"));

  ASSERT_OK_AND_ASSIGN(auto deleted, node().delPlugin(*podA_));
  ASSERT_THAT(deleted, Succeeded());

  // The pod still answers; only a leftover conntrack entry could still DNAT to it.
  EXPECT_THAT(client.request(std::chrono::milliseconds{1000}), IsUnreachable())
      << "from source port " << client.localPort();
}

TEST_F(PluginTrafficTest, AHostPortMovesToTheNextPodAfterDel) {
  ASSERT_NO_FATAL_FAILURE(SetUpPodA());
  ASSERT_OK_AND_ASSIGN(auto client, UdpClient::create(outside(), kNodeIpV4, kUdpHostPort));
  ASSERT_THAT(client.request(), RepliesFrom("pod-a udp"));
  ASSERT_OK_AND_ASSIGN(auto deleted, node().del(*podA_));
  ASSERT_THAT(deleted, Succeeded());

  Pod* podB = addPod("pod-b", {.mappings = {{kHostPort, kContainerPort, "tcp"},
                                            {kUdpHostPort, kUdpContainerPort, "udp"}}});
  ASSERT_NE(podB, nullptr);
  auto tcpB = serve(*podB, Transport::kTcp, kContainerPort);
  auto udpB = serve(*podB, Transport::kUdp, kUdpContainerPort);
  ASSERT_TRUE(tcpB && udpB);

  EXPECT_THAT(tcpRequest(outside(), kNodeIpV4, kHostPort), RepliesFrom("pod-b tcp"));
  EXPECT_THAT(client.request(), RepliesFrom("pod-b udp"));
}

TEST_F(PluginTrafficV6Test, ReachesPodOverIpv6FromOutsideAndFromTheNode) {
  Pod* pod = addPod("pod-a", {.mappings = {{kHostPort, kContainerPort, "tcp"},
                                           {kUdpHostPort, kUdpContainerPort, "udp"}}});
  ASSERT_NE(pod, nullptr);
  ASSERT_FALSE(pod->ipv6.empty()) << "bridge gave the pod no IPv6 address";
  auto tcp = serve(*pod, Transport::kTcp, kContainerPort);
  auto udp = serve(*pod, Transport::kUdp, kUdpContainerPort);
  ASSERT_TRUE(tcp && udp);

  auto reply = tcpRequest(outside(), kNodeIpV6, kHostPort);

  EXPECT_THAT(reply, RepliesFrom("pod-a tcp"));
  ASSERT_TRUE(reply.has_value());
  EXPECT_EQ(reply->peer, kOutsideIpV6);
  EXPECT_THAT(udpRequest(outside(), kNodeIpV6, kUdpHostPort), RepliesFrom("pod-a udp"));
  EXPECT_THAT(tcpRequest(nodeNetns(), kNodeIpV6, kHostPort), RepliesFrom("pod-a tcp"));
  // The same mapping serves IPv4 on a dual-stack pod.
  EXPECT_THAT(tcpRequest(outside(), kNodeIpV4, kHostPort), RepliesFrom("pod-a tcp"));
}

TEST_F(PluginTrafficV6Test, Ipv6HostIpMappingAnswersOnlyOnThatAddress) {
  Pod* pod = addPod("pod-a", {.mappings = {{kHostPort, kContainerPort, "tcp", kNodeIpV6}}});
  ASSERT_NE(pod, nullptr);
  auto tcp = serve(*pod, Transport::kTcp, kContainerPort);
  ASSERT_NE(tcp, nullptr);

  EXPECT_THAT(tcpRequest(outside(), kNodeIpV6, kHostPort), RepliesFrom("pod-a tcp"));
  EXPECT_THAT(tcpRequest(outside(), kSecondNodeIpV6, kHostPort), IsUnreachable());
  EXPECT_THAT(tcpRequest(outside(), kNodeIpV4, kHostPort), IsUnreachable())
      << "an IPv6 hostIP must not open the port on IPv4";
}

TEST_F(PluginTrafficV6Test, ReachesItselfOverIpv6WithHairpin) {
  Pod* pod = addPod("pod-a", {.mappings = {{kHostPort, kContainerPort, "tcp"}}});
  ASSERT_NE(pod, nullptr);
  auto tcp = serve(*pod, Transport::kTcp, kContainerPort);
  ASSERT_NE(tcp, nullptr);

  EXPECT_THAT(tcpRequest(pod->netns, kNodeIpV6, kHostPort), RepliesFrom("pod-a tcp"));
}

}  // namespace
}  // namespace hostport::test
