// prevResult is the previous plugin's word, and the agent takes the plugin's word for nothing
// either (issue 29, items 4, 6 and 8): with a real hostport-agent and the real plugin on a
// simulated node, an ADD whose prevResult names a loopback or node address, a prefix no pod
// subnet has, or no container address at all fails with code 7, leases nothing, installs
// nothing, and leaves every other pod's traffic as it was.

#include <algorithm>
#include <string>
#include <tuple>
#include <vector>

#include "tests/netns/agent_plugin_fixture.h"

namespace hostport::test {
namespace {

using ::testing::HasSubstr;
using ::testing::IsEmpty;
using ::testing::Not;

constexpr uint16_t kNodeOnlyPort = 9180;  // a node service on 127.0.0.1 alone
constexpr int kStaticHostPort = 9100;

class AgentPrevResultTest : public AgentPluginTest {
 protected:
  /// The plugin's ADD (or another verb) for `pod` through the agent, with `prevResult` in place
  /// of bridge's and one static mapping kStaticHostPort -> `containerPort`.
  CommandResult invokeWith(const std::string& verb, const Pod& pod,
                           const nlohmann::json& prevResult, int containerPort,
                           const std::map<std::string, std::string>& env = {}) {
    const AddOptions options = withAgent("", {{kStaticHostPort, containerPort, "tcp"}});
    const nlohmann::json config =
        node().pluginConfig(defaultCniVersion(), options.pluginKeys, prevResult, {});
    auto result = node().invokePlugin(verb, pod, config.dump(), env);
    if (!result) {
      ADD_FAILURE() << verb << ": " << result.error().message;
      return {};
    }
    return *result;
  }

  /// Nothing of the refused ADD is left: no lease (the node has no other pod), no element for its
  /// owner.
  void expectNothingLeft(const Pod& pod) {
    EXPECT_THAT(allLeases(), IsEmpty()) << "after " << pod.label;
    EXPECT_THAT(ownedBy(entries(), pod.owner()), IsEmpty());
  }

  /// The message of a CNI error on stdout, or "" (and a failure).
  static std::string messageOf(const CommandResult& result) {
    auto error = parseCniError(result.out);
    if (!error) {
      ADD_FAILURE() << "not a CNI error: " << result.out;
      return "";
    }
    return error->msg;
  }
};

// Item 4: a prevResult address 127.0.0.1/8 made the host port a door to a node service bound to
// 127.0.0.1 alone, for every pod on the bridge (route_localnet is on there for snat pods).
TEST_F(AgentPrevResultTest, ALoopbackAddressIsRefusedAndNoPodReachesANodeOnlyService) {
  ASSERT_NO_FATAL_FAILURE(startAgent());
  ASSERT_OK_AND_ASSIGN(auto nodeOnly, Server::start(nodeNetns(), Transport::kTcp, kNodeOnlyPort,
                                                    "node-only", "::ffff:127.0.0.1"));
  // A pod with a dynamic port and snat: route_localnet goes on for the bridge.
  Pod* neighbour = addAgentPod("neighbour", "web=8080");
  ASSERT_NE(neighbour, nullptr);
  ASSERT_THAT(tcpRequest(neighbour->netns, kPodGatewayV4, kNodeOnlyPort), IsUnreachable());
  Pod* pod = bridgedPod("pod-a");
  ASSERT_NE(pod, nullptr);
  nlohmann::json prevResult = pod->bridgeResult;
  prevResult["ips"][0]["address"] = "127.0.0.1/8";

  const CommandResult added = invokeWith("ADD", *pod, prevResult, kNodeOnlyPort);

  EXPECT_THAT(added, FailsWithCode(kCniInvalidConfig));
  EXPECT_THAT(messageOf(added), HasSubstr("prevResult.ips[0].address: \"127.0.0.1/8\" is a "
                                          "loopback address"));
  EXPECT_THAT(ownedBy(entries(), pod->owner()), IsEmpty());
  EXPECT_FALSE(leaseOf(*pod).has_value());
  for (const char* address : {kPodGatewayV4, kNodeIpV4}) {
    EXPECT_THAT(tcpRequest(neighbour->netns, address, kStaticHostPort), IsUnreachable())
        << "via " << address;
  }
  EXPECT_EQ(nodeOnly->served(), 0);
}

// The same door through an address the node holds: the bridge's own gateway. Only the node can
// tell (a route lookup), so the agent refuses it before the grant is answered, and takes the
// grant back.
TEST_F(AgentPrevResultTest, AnAddressOfTheNodeIsRefusedAndTheGrantTakenBack) {
  ASSERT_NO_FATAL_FAILURE(startAgent());
  Pod* pod = bridgedPod("pod-a");
  ASSERT_NE(pod, nullptr);
  for (const std::string address :
       {std::string(kPodGatewayV4) + "/24", std::string("192.0.2.1/24")}) {
    nlohmann::json prevResult = pod->bridgeResult;
    prevResult["ips"][0]["address"] = address;

    const CommandResult added = invokeWith("ADD", *pod, prevResult, 80);

    EXPECT_THAT(added, FailsWithCode(kCniInvalidConfig)) << address;
    EXPECT_THAT(messageOf(added), HasSubstr("is an address of this node")) << address;
    expectNothingLeft(*pod);
  }
  ASSERT_OK_AND_ASSIGN(auto pools, client().poolUsage());
  ASSERT_FALSE(pools.empty());
  EXPECT_EQ(pools[0].used, 0u);
}

// Item 6: a prevResult prefix /0 put "0.0.0.0/0 . 0.0.0.0/0" into the node-wide podnets set,
// after which every snat pod saw outside clients as the bridge's address.
TEST_F(AgentPrevResultTest, ADefaultRoutePrefixIsRefusedAndOutsideClientsKeepTheirAddress) {
  ASSERT_NO_FATAL_FAILURE(startAgent());
  Pod* neighbour = addAgentPod("neighbour", "web=8080");
  ASSERT_NE(neighbour, nullptr);
  auto server = serve(*neighbour, Transport::kTcp, 8080);
  ASSERT_NE(server, nullptr);
  const uint16_t port = grantedPort(*neighbour, "web", PortProtocol::kTcp);
  ASSERT_OK_AND_ASSIGN(const Reply before, tcpRequest(outside(), kNodeIpV4, port));
  ASSERT_EQ(before.peer, kOutsideIpV4);
  const auto entriesBefore = entries();
  Pod* pod = bridgedPod("pod-a");
  ASSERT_NE(pod, nullptr);

  for (const std::string address : {std::string("0.0.0.0/0"), pod->ipv4 + "/0"}) {
    nlohmann::json prevResult = pod->bridgeResult;
    prevResult["ips"][0]["address"] = address;

    const CommandResult added = invokeWith("ADD", *pod, prevResult, 8080);

    EXPECT_THAT(added, FailsWithCode(kCniInvalidConfig)) << address;
    EXPECT_THAT(messageOf(added), HasSubstr("prevResult.ips[0].address: \"" + address + "\""));
    EXPECT_EQ(entries(), entriesBefore) << address;
    ASSERT_OK_AND_ASSIGN(const Reply after, tcpRequest(outside(), kNodeIpV4, port));
    EXPECT_EQ(after.peer, kOutsideIpV4) << "an outside client is masqueraded after " << address;
  }
}

// Item 8: every prevResult that names no address on CNI_IFNAME inside the sandbox left a lease
// holding the static port with "podIPs": [] and nothing installed, and CHECK passed.
TEST_F(AgentPrevResultTest, APrevResultWithoutAContainerAddressLeasesNothingAndFailsCheck) {
  ASSERT_NO_FATAL_FAILURE(startAgent());
  Pod* pod = bridgedPod("pod-a");
  ASSERT_NE(pod, nullptr);
  const auto withIndex = [&](const nlohmann::json& index) {
    nlohmann::json result = pod->bridgeResult;
    for (auto& ip : result["ips"]) ip["interface"] = index;
    return result;
  };
  nlohmann::json withoutSandbox = pod->bridgeResult;
  for (auto& interface : withoutSandbox["interfaces"]) interface.erase("sandbox");
  const nlohmann::json v020 = {{"cniVersion", "0.2.0"},
                               {"ip4", {{"ip", pod->ipv4 + "/24"}, {"gateway", kPodGatewayV4}}}};
  const std::vector<std::tuple<std::string, nlohmann::json, std::string>> shapes = {
      {"interface 99", withIndex(99), "eth0"},
      {"interface -1", withIndex(-1), "eth0"},
      {"interface 2^63", withIndex(nlohmann::json(uint64_t{1} << 63)), "eth0"},
      {"interface without sandbox", withoutSandbox, "eth0"},
      {"0.2.0-shaped result", v020, "eth0"},
      {"CNI_IFNAME the result does not name", pod->bridgeResult, "net1"},
  };
  for (const auto& [shape, prevResult, ifname] : shapes) {
    const std::map<std::string, std::string> env = {{"CNI_IFNAME", ifname}};

    const CommandResult added = invokeWith("ADD", *pod, prevResult, 80, env);

    EXPECT_THAT(added, FailsWithCode(kCniInvalidConfig)) << shape;
    EXPECT_THAT(messageOf(added), HasSubstr("prevResult names no address on interface " + ifname +
                                            " inside the sandbox"))
        << shape;
    EXPECT_THAT(added.err, Not(HasSubstr("installed"))) << shape;
    expectNothingLeft(*pod);
    EXPECT_THAT(invokeWith("CHECK", *pod, prevResult, 80, env), FailsWithCode(::testing::Ge(1)))
        << shape << ": CHECK passed an attachment whose ports go nowhere";
  }
  ASSERT_OK_AND_ASSIGN(auto pools, client().poolUsage());
  ASSERT_FALSE(pools.empty());
  EXPECT_EQ(pools[0].used, 0u);
}

}  // namespace
}  // namespace hostport::test
