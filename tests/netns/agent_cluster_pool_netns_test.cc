// A cluster pool on a real node (issue 27): the pod arrives as the admission server left it, its
// claimed port as a container port's hostPort (the runtime's portMapping) and its entry in
// hostport.io/ports. The agent grants the entry exactly that port, named, and traffic reaches the
// pod through it; an entry without its claim, or a hand-written hostPort in the pool, fails with
// code 7 and leaves nothing.

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "tests/netns/agent_plugin_fixture.h"

namespace hostport::test {
namespace {

using ::testing::HasSubstr;
using ::testing::IsEmpty;

constexpr std::string_view kPools = R"(pools:
  default:
    ranges: ["41000-41019"]
  global:
    ranges: ["41100-41119"]
    scope: cluster
)";

class AgentClusterPoolTest : public AgentPluginTest {
 protected:
  void SetUp() override {
    AgentPluginTest::SetUp();
    ASSERT_OK_AND_ASSIGN(agent_,
                         AgentProcess::start(HOSTPORT_AGENT_PATH, nodeNetns(),
                                             {.portRange = "", .configYaml = std::string(kPools)}));
  }

  /// ADD options for a pod of pool "global" asking `ports`, with `mappings` as its runtime has
  /// them.
  AddOptions inGlobal(const std::string& ports, const std::vector<PortMapping>& mappings) const {
    AddOptions options = withAgent(ports, mappings);
    options.pluginKeys["runtimeConfig"]["io.kubernetes.cri.pod-annotations"]["hostport.io/pool"] =
        "global";
    return options;
  }
};

TEST_F(AgentClusterPoolTest, TheClaimedPortIsTheEntrysGrantAndCarriesTraffic) {
  Pod* pod =
      addPod("pod-a", inGlobal("web=80, dns=53/tcpudp",
                               {{41107, 80, "tcp"}, {41110, 53, "tcp"}, {41110, 53, "udp"}}));
  ASSERT_NE(pod, nullptr);
  auto tcp = serve(*pod, Transport::kTcp, 80);
  auto udp = serve(*pod, Transport::kUdp, 53);
  ASSERT_TRUE(tcp && udp);

  EXPECT_EQ(grantedPort(*pod, "web", PortProtocol::kTcp), 41107);
  EXPECT_EQ(grantedPort(*pod, "dns", PortProtocol::kTcpUdp), 41110);
  const auto lease = leaseOf(*pod);
  ASSERT_TRUE(lease);
  EXPECT_EQ(lease->pool, "global");
  EXPECT_EQ(lease->ports.size(), 2u) << "the mappings were the claims, not static grants";

  EXPECT_THAT(tcpRequest(outside(), kNodeIpV4, 41107), RepliesFrom("pod-a tcp"));
  EXPECT_THAT(udpRequest(outside(), kNodeIpV4, 41110), RepliesFrom("pod-a udp"));
}

TEST_F(AgentClusterPoolTest, AnEntryWithoutItsClaimFailsWithCode7AndLeavesNothing) {
  Pod* pod = node().createPod("pod-a").value_or(nullptr);
  ASSERT_NE(pod, nullptr);
  ASSERT_OK_AND_ASSIGN(auto added, node().add(*pod, inGlobal("web=80", {})));
  EXPECT_THAT(added, FailsWithCode(kCniInvalidConfig));
  ASSERT_OK_AND_ASSIGN(auto error, parseCniError(added.out));
  EXPECT_THAT(error.msg, HasSubstr("port \"web\" asks cluster pool \"global\""));
  EXPECT_THAT(error.msg, HasSubstr("hostport-admission"));
  EXPECT_THAT(allLeases(), IsEmpty());
  EXPECT_THAT(entries(), IsEmpty());
}

TEST_F(AgentClusterPoolTest, AHandWrittenHostPortInAClusterPoolFailsWithCode7) {
  Pod* pod = node().createPod("pod-a").value_or(nullptr);
  ASSERT_NE(pod, nullptr);
  ASSERT_OK_AND_ASSIGN(auto added, node().add(*pod, withAgent("", {{41101, 80, "tcp"}})));
  EXPECT_THAT(added, FailsWithCode(kCniInvalidConfig));
  ASSERT_OK_AND_ASSIGN(auto error, parseCniError(added.out));
  EXPECT_THAT(error.msg, HasSubstr("hostPort 41101/tcp lies in cluster pool \"global\""));
  EXPECT_THAT(allLeases(), IsEmpty());
}

}  // namespace
}  // namespace hostport::test
