// ADD, DEL and CHECK of the plugin on a simulated node, observed through the nftables state of
// the node netns (`nft -j list table ip hostport`) and, where it matters, through traffic.

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <sys/prctl.h>
#include <sys/wait.h>

#include <fstream>

#include "common/scope_exit.h"
#include "tests/support/plugin_fixture.h"
#include "tests/support/wait.h"

namespace hostport::test {
namespace {

using ::testing::Contains;
using ::testing::Field;
using ::testing::Ge;
using ::testing::HasSubstr;
using ::testing::IsEmpty;
using ::testing::Not;
using ::testing::SizeIs;
using ::testing::UnorderedElementsAre;

constexpr uint16_t kHostPort = 8080;
constexpr uint16_t kContainerPort = 80;
constexpr uint16_t kUdpHostPort = 5353;
constexpr uint16_t kUdpContainerPort = 53;

class PluginLifecycleTest : public PluginFixture {
 public:
  static AddOptions tcpAndUdp() {
    return {
        .mappings = {{kHostPort, kContainerPort, "tcp"}, {kUdpHostPort, kUdpContainerPort, "udp"}}};
  }

 protected:
  PluginLifecycleTest() : PluginFixture(HOSTPORT_PLUGIN_PATH) {}

  /// The elements pod-a's default ADD (tcp 8080->80, udp 5353->53, snat) must install.
  static std::vector<NftEntry> expectedEntries(const Pod& pod) {
    return {
        {"ip", "ports", "tcp . 8080", pod.ipv4 + " . 80", pod.owner()},
        {"ip", "ports", "udp . 5353", pod.ipv4 + " . 53", pod.owner()},
        {"ip", "snatpods", pod.ipv4, "", pod.owner()},
        // Shared by the pods of the subnet, so owned by none of them.
        {"ip", "podnets", std::string(kPodSubnetV4) + " . " + std::string(kPodSubnetV4), "", ""},
    };
  }

  /// Reads a sysctl of the node netns (/proc/sys/net is per netns of the reading thread).
  std::string nodeSysctl(const std::string& path) {
    auto value = nodeNetns().run([&] {
      std::ifstream file("/proc/sys/" + path);
      std::string text;
      std::getline(file, text);
      return text;
    });
    return value.value_or("<unreadable>");
  }
};

TEST_F(PluginLifecycleTest, AddInstallsMapElementsOwnedByTheAttachment) {
  Pod* pod = addPod("pod-a", tcpAndUdp());
  ASSERT_NE(pod, nullptr);

  auto all = entries();

  EXPECT_THAT(all, UnorderedElementsAre(expectedEntries(*pod)[0], expectedEntries(*pod)[1],
                                        expectedEntries(*pod)[2], expectedEntries(*pod)[3]));
}

TEST_F(PluginLifecycleTest, HostIpMappingGoesToTheIpportsMap) {
  Pod* pod = addPod("pod-a", {.mappings = {{kHostPort, kContainerPort, "tcp", kSecondNodeIpV4}}});
  ASSERT_NE(pod, nullptr);

  auto owned = ownedBy(entries(), pod->owner());

  EXPECT_THAT(owned,
              Contains(NftEntry{"ip", "ipports", std::string(kSecondNodeIpV4) + " . tcp . 8080",
                                pod->ipv4 + " . 80", pod->owner()}));
  EXPECT_THAT(owned, Not(Contains(Field(&NftEntry::set, "ports"))));
}

TEST_F(PluginLifecycleTest, UnspecifiedHostIpMeansAnyAddress) {
  Pod* pod = addPod("pod-a", {.mappings = {{kHostPort, kContainerPort, "tcp", "0.0.0.0"}}});
  ASSERT_NE(pod, nullptr);

  auto owned = ownedBy(entries(), pod->owner());

  EXPECT_THAT(owned,
              Contains(NftEntry{"ip", "ports", "tcp . 8080", pod->ipv4 + " . 80", pod->owner()}));
  EXPECT_THAT(owned, Not(Contains(Field(&NftEntry::set, "ipports"))));
}

TEST_F(PluginLifecycleTest, MasqAllMasqueradesEverySourceForThePod) {
  Pod* pod = addPod("pod-a", {.mappings = {{kHostPort, kContainerPort, "tcp"}},
                              .pluginKeys = {{"masqAll", true}}});
  ASSERT_NE(pod, nullptr);

  EXPECT_THAT(ownedBy(entries(), pod->owner()),
              Contains(NftEntry{"ip", "masqall", pod->ipv4, "", pod->owner()}));
  EXPECT_THAT(ownedBy(entries(), pod->owner()), Not(Contains(Field(&NftEntry::set, "snatpods"))));
}

TEST_F(PluginLifecycleTest, WithoutSnatInstallsNoMasqueradeAndLeavesRouteLocalnetAlone) {
  Pod* pod = addPod(
      "pod-a", {.mappings = {{kHostPort, kContainerPort, "tcp"}}, .pluginKeys = {{"snat", false}}});
  ASSERT_NE(pod, nullptr);

  auto owned = ownedBy(entries(), pod->owner());

  EXPECT_THAT(owned, Contains(Field(&NftEntry::set, "ports")));
  EXPECT_THAT(owned, Not(Contains(Field(&NftEntry::set, "snatpods"))));
  EXPECT_THAT(owned, Not(Contains(Field(&NftEntry::set, "masqall"))));
  EXPECT_THAT(entries(), Not(Contains(Field(&NftEntry::set, "podnets"))));
  EXPECT_EQ(nodeSysctl("net/ipv4/conf/" + node().bridge() + "/route_localnet"), "0");
}

TEST_F(PluginLifecycleTest, SnatSetsRouteLocalnetOnTheBridge) {
  Pod* pod = addPod("pod-a", {.mappings = {{kHostPort, kContainerPort, "tcp"}}});
  ASSERT_NE(pod, nullptr);

  EXPECT_EQ(nodeSysctl("net/ipv4/conf/" + node().bridge() + "/route_localnet"), "1");
}

TEST_F(PluginLifecycleTest, AddPrintsThePrevResult) {
  Pod* pod = addPod("pod-a", tcpAndUdp());
  ASSERT_NE(pod, nullptr);

  // A 1.0.0 result converted to a later version keeps its shape; only cniVersion changes.
  nlohmann::json expected = pod->bridgeResult;
  expected["cniVersion"] = defaultCniVersion();
  EXPECT_EQ(pod->cachedResult, expected);
}

TEST_F(PluginLifecycleTest, RepeatedAddIsIdempotent) {
  Pod* pod = addPod("pod-a", tcpAndUdp());
  ASSERT_NE(pod, nullptr);
  const auto firstOutput = pod->cachedResult;
  const auto before = entries();
  ASSERT_OK_AND_ASSIGN(const std::string rulesBefore, rulesetJson(nodeNetns()));

  ASSERT_OK_AND_ASSIGN(auto again, node().add(*pod, tcpAndUdp()));

  EXPECT_THAT(again, Succeeded());
  EXPECT_EQ(entries(), before);
  EXPECT_EQ(pod->cachedResult, firstOutput);
  ASSERT_OK_AND_ASSIGN(const std::string rulesAfter, rulesetJson(nodeNetns()));
  // Same content, one copy of everything; re-created objects (new handles) are tolerated.
  EXPECT_EQ(rulesetDifference(rulesBefore, rulesAfter, /*ignoreHandles=*/true), "")
      << "a repeated ADD changed the ruleset";
}

// A second ADD with other mappings and no DEL in between is outside the CNI contract. With
// the agent it cannot happen: the same attachment key gets the same lease back.

TEST_F(PluginLifecycleTest, AcceptsContainerdCapitalisedPortMappingKeys) {
  Pod* pod = node().createPod("pod-a").value_or(nullptr);
  ASSERT_NE(pod, nullptr);
  ASSERT_OK(node().bridgeUp(*pod));
  auto config = node().pluginConfig(defaultCniVersion(), {}, pod->bridgeResult, {});
  config["runtimeConfig"] = {
      {"portMappings",
       {{{"HostPort", kHostPort},
         {"ContainerPort", kContainerPort},
         {"Protocol", "TCP"},
         {"HostIP", ""}},
        {{"HostPort", kUdpHostPort}, {"ContainerPort", kUdpContainerPort}, {"Protocol", "UDP"}}}}};
  auto server = serve(*pod, Transport::kTcp, kContainerPort);
  ASSERT_NE(server, nullptr);

  ASSERT_OK_AND_ASSIGN(auto added, node().invokePlugin("ADD", *pod, config.dump()));

  ASSERT_THAT(added, Succeeded());
  auto owned = ownedBy(entries(), pod->owner());
  EXPECT_THAT(owned,
              Contains(NftEntry{"ip", "ports", "tcp . 8080", pod->ipv4 + " . 80", pod->owner()}));
  EXPECT_THAT(owned,
              Contains(NftEntry{"ip", "ports", "udp . 5353", pod->ipv4 + " . 53", pod->owner()}));
  EXPECT_THAT(tcpRequest(outside(), kNodeIpV4, kHostPort), RepliesFrom("pod-a tcp"));
}

TEST_F(PluginLifecycleTest, DelRemovesEveryElementOfTheAttachmentAndNoOther) {
  Pod* podA = addPod("pod-a", tcpAndUdp());
  ASSERT_NE(podA, nullptr);
  Pod* podB = addPod("pod-b", {.mappings = {{9090, kContainerPort, "tcp"}}});
  ASSERT_NE(podB, nullptr);
  const auto ofB = ownedBy(entries(), podB->owner());
  ASSERT_THAT(ofB, Not(IsEmpty()));

  ASSERT_OK_AND_ASSIGN(auto deleted, node().del(*podA));

  EXPECT_THAT(deleted, Succeeded());
  const auto after = entries();
  EXPECT_THAT(ownedBy(after, podA->owner()), IsEmpty());
  EXPECT_EQ(ownedBy(after, podB->owner()), ofB);
  EXPECT_THAT(withoutPodSubnets(after), SizeIs(ofB.size()))
      << "elements without the owner's comment were left";
  EXPECT_THAT(after, Contains(Field(&NftEntry::set, "podnets"))) << "pod-b's subnet too";
}

// The DEL's answer does not wait for the kernel to free what it deleted
// (cni-plugin/detached_teardown.h): the process the runtime runs exits once the deletion is in
// force, and the node's netlink keeper (netlink_keeper.h), a child the first plugin process left,
// holds its netlink handle and releases it once the calls have been quiet, then exits. As the
// subreaper from before the first call, the test inherits that child and sees it exit by itself.
TEST_F(PluginLifecycleTest, DelExitsOnceTheElementsAreGoneAndTheKeeperReleasesTheHandleLater) {
  ASSERT_EQ(prctl(PR_SET_CHILD_SUBREAPER, 1), 0);
  const ScopeExit notSubreaper([] { prctl(PR_SET_CHILD_SUBREAPER, 0); });
  Pod* pod = addPod("pod-a", tcpAndUdp());
  ASSERT_NE(pod, nullptr);

  ASSERT_OK_AND_ASSIGN(auto deleted, node().delPlugin(*pod));

  EXPECT_THAT(deleted, Succeeded());
  EXPECT_THAT(ownedBy(entries(), pod->owner()), IsEmpty()) << "in force when the DEL exits";
  // Only the keeper exits now, once it has been idle: this test's other children (its servers)
  // run on.
  siginfo_t exited{};
  const bool reaped = waitUntil([&] {
    exited = {};
    return waitid(P_ALL, 0, &exited, WEXITED | WNOHANG) == 0 && exited.si_pid != 0;
  });
  ASSERT_TRUE(reaped) << "no keeper was left to release the handles";
  EXPECT_EQ(exited.si_code, CLD_EXITED);
  EXPECT_EQ(exited.si_status, 0);
}

TEST_F(PluginLifecycleTest, DelIsIdempotent) {
  Pod* pod = addPod("pod-a", tcpAndUdp());
  ASSERT_NE(pod, nullptr);

  ASSERT_OK_AND_ASSIGN(auto first, node().delPlugin(*pod));
  ASSERT_OK_AND_ASSIGN(auto second, node().delPlugin(*pod));
  ASSERT_OK_AND_ASSIGN(auto chain, node().del(*pod));

  EXPECT_THAT(first, Succeeded());
  EXPECT_THAT(second, Succeeded());
  EXPECT_THAT(chain, Succeeded());
  EXPECT_THAT(ownedBy(entries(), pod->owner()), IsEmpty());
}

TEST_F(PluginLifecycleTest, DelWithoutPrevResultAndWithoutNetnsRemovesTheElements) {
  Pod* pod = addPod("pod-a", tcpAndUdp());
  ASSERT_NE(pod, nullptr);
  ASSERT_THAT(ownedBy(entries(), pod->owner()), Not(IsEmpty()));

  // containerd's second DEL, at sandbox removal: no prevResult, CNI_NETNS="".
  ASSERT_OK_AND_ASSIGN(auto deleted,
                       node().delPlugin(*pod, {.withPrevResult = false, .withNetns = false}));

  EXPECT_THAT(deleted, Succeeded());
  EXPECT_THAT(ownedBy(entries(), pod->owner()), IsEmpty());
}

TEST_F(PluginLifecycleTest, DelWithoutRuntimeConfigRemovesTheElements) {
  Pod* pod = addPod("pod-a", tcpAndUdp());
  ASSERT_NE(pod, nullptr);

  ASSERT_OK_AND_ASSIGN(auto deleted, node().delPlugin(*pod, {.withRuntimeConfig = false}));

  EXPECT_THAT(deleted, Succeeded());
  EXPECT_THAT(ownedBy(entries(), pod->owner()), IsEmpty());
}

TEST_F(PluginLifecycleTest, DelOfAnAttachmentNeverAddedSucceedsOnAFreshNode) {
  Pod* pod = bridgedPod("pod-a");
  ASSERT_NE(pod, nullptr);
  pod->lastAdd = tcpAndUdp();

  ASSERT_OK_AND_ASSIGN(auto deleted, node().delPlugin(*pod, {.withPrevResult = false}));
  ASSERT_OK_AND_ASSIGN(auto withoutNetns,
                       node().delPlugin(*pod, {.withPrevResult = false, .withNetns = false}));

  EXPECT_THAT(deleted, Succeeded());
  EXPECT_THAT(withoutNetns, Succeeded());
  EXPECT_THAT(entries(), IsEmpty());
}

TEST_F(PluginLifecycleTest, DelOfAnotherAttachmentLeavesOurElements) {
  Pod* podA = addPod("pod-a", tcpAndUdp());
  ASSERT_NE(podA, nullptr);
  Pod* stranger = bridgedPod("stranger");
  ASSERT_NE(stranger, nullptr);
  stranger->lastAdd = tcpAndUdp();  // claims the same ports in its DEL's runtimeConfig
  const auto before = entries();

  ASSERT_OK_AND_ASSIGN(auto deleted, node().delPlugin(*stranger));

  EXPECT_THAT(deleted, Succeeded());
  EXPECT_EQ(entries(), before);
}

TEST_F(PluginLifecycleTest, CheckPassesAfterAdd) {
  Pod* pod = addPod("pod-a", tcpAndUdp());
  ASSERT_NE(pod, nullptr);

  ASSERT_OK_AND_ASSIGN(auto checked, node().check(*pod));

  EXPECT_THAT(checked, Succeeded());
}

TEST_F(PluginLifecycleTest, CheckFailsWhenAnyElementIsDeletedByHandAndPassesAfterReAdd) {
  Pod* pod = addPod("pod-a", tcpAndUdp());
  ASSERT_NE(pod, nullptr);
  const auto owned = ownedBy(entries(), pod->owner());
  ASSERT_THAT(owned, SizeIs(Ge(3u)));

  for (const auto& entry : owned) {
    SCOPED_TRACE(::testing::PrintToString(entry));
    ASSERT_OK(deleteElement(nodeNetns(), entry));
    ASSERT_THAT(ownedBy(entries(), pod->owner()), Not(Contains(entry)));

    ASSERT_OK_AND_ASSIGN(auto checked, node().check(*pod));
    EXPECT_THAT(checked, FailsWithCode(::testing::_));

    ASSERT_OK_AND_ASSIGN(auto readded, node().add(*pod, tcpAndUdp()));
    ASSERT_THAT(readded, Succeeded());
    EXPECT_EQ(ownedBy(entries(), pod->owner()), owned) << "a repeated ADD repairs the state";
    ASSERT_OK_AND_ASSIGN(auto repaired, node().check(*pod));
    EXPECT_THAT(repaired, Succeeded());
  }
}

TEST_F(PluginLifecycleTest, CheckFailsWhenAnElementPointsElsewhere) {
  Pod* pod = addPod("pod-a", {.mappings = {{kHostPort, kContainerPort, "tcp"}}});
  ASSERT_NE(pod, nullptr);
  const NftEntry right{"ip", "ports", "tcp . 8080", pod->ipv4 + " . 80", pod->owner()};
  ASSERT_THAT(entries(), Contains(right));

  ASSERT_OK(deleteElement(nodeNetns(), right));
  ASSERT_OK(nodeNetns().exec(
      {"nft", "add", "element", "ip", "hostport", "ports",
       "{ tcp . 8080 comment \"" + pod->owner() + "\" : " + pod->ipv4 + " . 81 }"}));

  ASSERT_OK_AND_ASSIGN(auto checked, node().check(*pod));
  EXPECT_THAT(checked, FailsWithCode(::testing::_));
}

TEST_F(PluginLifecycleTest, ConflictingHostPortFailsAndKeepsTheFirstOwner) {
  Pod* podA = addPod("pod-a", tcpAndUdp());
  ASSERT_NE(podA, nullptr);
  auto serverA = serve(*podA, Transport::kTcp, kContainerPort);
  ASSERT_NE(serverA, nullptr);
  const auto before = entries();
  Pod* podB = node().createPod("pod-b").value_or(nullptr);
  ASSERT_NE(podB, nullptr);
  auto serverB = serve(*podB, Transport::kTcp, kContainerPort);
  ASSERT_NE(serverB, nullptr);

  ASSERT_OK_AND_ASSIGN(auto conflicting,
                       node().add(*podB, {.mappings = {{kHostPort, kContainerPort, "tcp"}}}));

  EXPECT_THAT(conflicting, FailsWithCode(Ge(100)));
  EXPECT_EQ(entries(), before) << "the failed ADD changed the table";
  EXPECT_THAT(tcpRequest(outside(), kNodeIpV4, kHostPort), RepliesFrom("pod-a tcp"));

  // The runtime follows a failed ADD with a DEL: it must not take pod-a's port away.
  ASSERT_OK_AND_ASSIGN(auto cleanup, node().delPlugin(*podB, {.withPrevResult = false}));
  EXPECT_THAT(cleanup, Succeeded());
  EXPECT_EQ(entries(), before);
  EXPECT_THAT(tcpRequest(outside(), kNodeIpV4, kHostPort), RepliesFrom("pod-a tcp"));
}

TEST_F(PluginLifecycleTest, ConflictOnOneMappingInstallsNoneOfTheOthers) {
  Pod* podA = addPod("pod-a", {.mappings = {{kHostPort, kContainerPort, "tcp"}}});
  ASSERT_NE(podA, nullptr);
  const auto before = entries();
  Pod* podB = node().createPod("pod-b").value_or(nullptr);
  ASSERT_NE(podB, nullptr);

  ASSERT_OK_AND_ASSIGN(auto conflicting,
                       node().add(*podB, {.mappings = {{9090, kContainerPort, "tcp"},
                                                       {kHostPort, kContainerPort, "tcp"}}}));

  EXPECT_THAT(conflicting, FailsWithCode(Ge(100)));
  EXPECT_EQ(entries(), before);
}

TEST_F(PluginLifecycleTest, SameHostPortOnAnotherProtocolIsNoConflict) {
  Pod* podA = addPod("pod-a", {.mappings = {{kHostPort, kContainerPort, "tcp"}}});
  ASSERT_NE(podA, nullptr);

  Pod* podB = addPod("pod-b", {.mappings = {{kHostPort, kContainerPort, "udp"}}});

  ASSERT_NE(podB, nullptr);
  EXPECT_THAT(ownedBy(entries(), podB->owner()), Contains(Field(&NftEntry::key, "udp . 8080")));
}

TEST_F(PluginLifecycleTest, SkipsAMappingForAFamilyThePodHasNoAddressIn) {
  Pod* pod = node().createPod("pod-a").value_or(nullptr);
  ASSERT_NE(pod, nullptr);

  ASSERT_OK_AND_ASSIGN(auto added,
                       node().add(*pod, {.mappings = {{kHostPort, kContainerPort, "tcp", kNodeIpV6},
                                                      {9090, kContainerPort, "tcp"}}}));

  ASSERT_THAT(added, Succeeded());
  EXPECT_THAT(added.err, HasSubstr("skip")) << "stderr does not say the mapping was skipped";
  const auto owned = ownedBy(entries(), pod->owner());
  EXPECT_THAT(owned, Not(Contains(Field(&NftEntry::family, "ip6"))));
  EXPECT_THAT(owned, Contains(Field(&NftEntry::key, "tcp . 9090")));
}

class PluginLifecycleV6Test : public PluginFixture {
 protected:
  PluginLifecycleV6Test() : PluginFixture(HOSTPORT_PLUGIN_PATH, /*ipv6=*/true) {}
};

TEST_F(PluginLifecycleV6Test, InstallsAndDeletesIpv6ElementsOfADualStackPod) {
  Pod* pod = addPod("pod-a", PluginLifecycleTest::tcpAndUdp());
  ASSERT_NE(pod, nullptr);
  const auto owned = ownedBy(entries(), pod->owner());
  EXPECT_THAT(owned,
              Contains(NftEntry{"ip6", "ports", "tcp . 8080", pod->ipv6 + " . 80", pod->owner()}));
  EXPECT_THAT(owned,
              Contains(NftEntry{"ip6", "ports", "udp . 5353", pod->ipv6 + " . 53", pod->owner()}));

  ASSERT_OK_AND_ASSIGN(auto deleted, node().delPlugin(*pod));

  EXPECT_THAT(deleted, Succeeded());
  EXPECT_THAT(ownedBy(entries(), pod->owner()), IsEmpty());
}

}  // namespace
}  // namespace hostport::test
