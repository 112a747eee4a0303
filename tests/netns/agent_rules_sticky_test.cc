// Pool rules and sticky ports with the built plugin and a real agent: an ADD outside a pool's
// namespaces or over its quota fails with the CNI code and a message naming the pool, the
// namespace and the rule, and nothing is leased or installed; new rules arrive by SIGHUP and by
// rewriting the config file, without a restart and without revoking a lease; a pod re-created
// under its name after an agent restart gets its ports back unless it opted out.

#include <csignal>
#include <filesystem>
#include <fstream>
#include <thread>

#include "agent_plugin_fixture.h"

namespace hostport::test {
namespace {

using ::testing::HasSubstr;
using ::testing::IsEmpty;

constexpr int kCniQuotaExceeded = 104;

std::string poolConfig(const std::string& rules) {
  return "pools:\n  default:\n    ranges: [\"41000-41019\"]\n    reuseDelaySeconds: 0\n" + rules;
}

class AgentPoolRulesTest : public AgentPluginTest {
 protected:
  void startWithConfig(const std::string& yaml) {
    ASSERT_OK_AND_ASSIGN(agent_, AgentProcess::start(HOSTPORT_AGENT_PATH, nodeNetns(),
                                                     {.portRange = "", .configYaml = yaml}));
  }

  /// The plugin's ADD for `pod` as pod `name` of `namespaceName` (a fresh UID each time), with
  /// `annotations`.
  Result<CommandResult> addAs(const Pod& pod, const std::string& namespaceName,
                              const std::string& name, const nlohmann::json& annotations) {
    const nlohmann::json keys = {
        {"agentSocket", agent_->socketPath()},
        {"releaseSpool", agent_->releaseSpool()},
        {"runtimeConfig", {{"io.kubernetes.cri.pod-annotations", annotations}}}};
    const auto config = node().pluginConfig(defaultCniVersion(), keys, pod.bridgeResult, {});
    static int uid = 0;
    return node().invokePlugin(
        "ADD", pod, config.dump(),
        {{"CNI_ARGS", "K8S_POD_NAMESPACE=" + namespaceName + ";K8S_POD_NAME=" + name +
                          ";K8S_POD_UID=uid-" + std::to_string(++uid)}});
  }

  Result<CommandResult> delOf(const Pod& pod, const nlohmann::json& annotations) {
    const nlohmann::json keys = {
        {"agentSocket", agent_->socketPath()},
        {"releaseSpool", agent_->releaseSpool()},
        {"runtimeConfig", {{"io.kubernetes.cri.pod-annotations", annotations}}}};
    const auto config = node().pluginConfig(defaultCniVersion(), keys, pod.bridgeResult, {});
    return node().invokePlugin("DEL", pod, config.dump());
  }

  /// Rewrites the agent's config file as a ConfigMap update does: a new file renamed over it.
  void rewriteConfig(const std::string& yaml) {
    const std::string tmp = agent_->configPath() + ".tmp";
    {
      std::ofstream out(tmp);
      out << yaml;
    }
    std::filesystem::rename(tmp, agent_->configPath());
  }

  /// Waits until GET /v1/pools shows `namespaces` as the default pool's allow list. Bounded only
  /// so that a reload that never comes fails the test instead of hanging it.
  void awaitNamespaces(const std::vector<std::string>& namespaces) {
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(20);
    std::vector<std::string> seen;
    while (std::chrono::steady_clock::now() < deadline) {
      auto rows = client().poolUsage();
      ASSERT_OK(rows);
      seen = rows->at(0).namespaces;
      if (seen == namespaces) return;
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
    FAIL() << "the agent never applied the new rules; it has " << ::testing::PrintToString(seen);
  }

  std::string refusals(const std::string& reason) {
    auto page = client().getText("/metrics");
    EXPECT_OK(page);
    const auto value = metricValue(
        page.value_or(""),
        "hostport_allocation_refusals_total{pool=\"default\",reason=\"" + reason + "\"}");
    return value ? std::to_string(static_cast<int>(*value)) : "none";
  }
};

TEST_F(AgentPoolRulesTest, RefusesANamespaceOutsideThePoolWithCode7AndInstallsNothing) {
  ASSERT_NO_FATAL_FAILURE(startWithConfig(poolConfig("    namespaces: [\"games-*\"]\n")));
  Pod* pod = bridgedPod("web-0");
  ASSERT_NE(pod, nullptr);
  ASSERT_OK_AND_ASSIGN(auto refused, addAs(*pod, "web", "web-0", {{"hostport.io/ports", "a=80"}}));
  EXPECT_THAT(refused, FailsWithCode(kCniInvalidConfig));
  ASSERT_OK_AND_ASSIGN(const CniError error, parseCniError(refused.out));
  EXPECT_THAT(error.msg,
              HasSubstr("pool \"default\" does not allow namespace \"web\" (namespaces: games-*)"));
  EXPECT_THAT(allLeases(), IsEmpty());
  EXPECT_THAT(ownedBy(entries(), pod->owner()), IsEmpty());
  EXPECT_EQ(refusals("namespace"), "1");

  ASSERT_OK_AND_ASSIGN(auto allowed,
                       addAs(*pod, "games-eu", "server-0", {{"hostport.io/ports", "a=80"}}));
  EXPECT_THAT(allowed, Succeeded());
}

TEST_F(AgentPoolRulesTest, RefusesAPodOverItsQuotaWithCode104NamingTheRule) {
  ASSERT_NO_FATAL_FAILURE(
      startWithConfig(poolConfig("    maxPortsPerPod: 4\n    maxPortsPerNamespace: 6\n")));
  Pod* first = bridgedPod("a");
  Pod* second = bridgedPod("b");
  ASSERT_TRUE(first && second);
  // A range counts its ports: 5 is over the pod quota of 4.
  ASSERT_OK_AND_ASSIGN(auto tooWide,
                       addAs(*first, "games", "s-0", {{"hostport.io/ports", "rtp=5000-5004/udp"}}));
  EXPECT_THAT(tooWide, FailsWithCode(kCniQuotaExceeded));
  ASSERT_OK_AND_ASSIGN(const CniError error, parseCniError(tooWide.out));
  EXPECT_THAT(error.msg, HasSubstr("pool \"default\" allows at most 4 ports per pod: pod "
                                   "\"games/s-0\" holds 0 and asks for 5 (maxPortsPerPod)"));
  EXPECT_THAT(allLeases(), IsEmpty());
  EXPECT_THAT(ownedBy(entries(), first->owner()), IsEmpty());

  ASSERT_OK_AND_ASSIGN(auto fits,
                       addAs(*first, "games", "s-0", {{"hostport.io/ports", "rtp=5000-5003/udp"}}));
  EXPECT_THAT(fits, Succeeded());
  ASSERT_OK_AND_ASSIGN(auto overNamespace, addAs(*second, "games", "s-1",
                                                 {{"hostport.io/ports", "rtp=5000-5002/udp"}}));
  EXPECT_THAT(overNamespace, FailsWithCode(kCniQuotaExceeded));
  EXPECT_EQ(allLeases().size(), 1u);
  EXPECT_EQ(refusals("pod_quota"), "1");
  EXPECT_EQ(refusals("namespace_quota"), "1");
}

TEST_F(AgentPoolRulesTest, AppliesNewRulesOnSighupAndOnAFileChangeKeepingLeases) {
  ASSERT_NO_FATAL_FAILURE(startWithConfig(poolConfig("")));
  Pod* web = bridgedPod("web");
  Pod* later = bridgedPod("later");
  ASSERT_TRUE(web && later);
  ASSERT_OK_AND_ASSIGN(auto held, addAs(*web, "web", "web-0", {{"hostport.io/ports", "a=80"}}));
  ASSERT_THAT(held, Succeeded());

  // SIGHUP: the pool loses namespace "web"; its lease stays, a new request is refused.
  rewriteConfig(poolConfig("    namespaces: [\"games-*\"]\n"));
  ASSERT_EQ(::kill(agent_->pid(), SIGHUP), 0);
  ASSERT_NO_FATAL_FAILURE(awaitNamespaces({"games-*"}));
  EXPECT_TRUE(leaseOf(*web).has_value());
  ASSERT_OK_AND_ASSIGN(auto refused,
                       addAs(*later, "web", "web-1", {{"hostport.io/ports", "a=80"}}));
  EXPECT_THAT(refused, FailsWithCode(kCniInvalidConfig));

  // A config that does not check is refused and the running rules stay.
  rewriteConfig(poolConfig("    namespaces: [\"Not_A_Namespace\"]\n"));
  ASSERT_EQ(::kill(agent_->pid(), SIGHUP), 0);
  ASSERT_OK_AND_ASSIGN(auto stillRefused,
                       addAs(*later, "web", "web-1", {{"hostport.io/ports", "a=80"}}));
  EXPECT_THAT(stillRefused, FailsWithCode(kCniInvalidConfig));

  // The file alone (no signal): "web" is back.
  rewriteConfig(poolConfig("    namespaces: [\"games-*\", \"web\"]\n"));
  ASSERT_NO_FATAL_FAILURE(awaitNamespaces({"games-*", "web"}));
  ASSERT_OK_AND_ASSIGN(auto allowed,
                       addAs(*later, "web", "web-1", {{"hostport.io/ports", "a=80"}}));
  EXPECT_THAT(allowed, Succeeded());
  EXPECT_TRUE(agent_->waitForLog("agent.reload_failed")) << agent_->describe();
  EXPECT_TRUE(agent_->waitForLog("agent.reloaded trigger=file")) << agent_->describe();
  EXPECT_TRUE(agent_->running());
}

TEST_F(AgentPoolRulesTest, GivesARecreatedPodItsPortsAfterAnAgentRestartUnlessItOptedOut) {
  ASSERT_NO_FATAL_FAILURE(startWithConfig(poolConfig("")));
  Pod* filler = bridgedPod("filler");
  Pod* first = bridgedPod("first");
  ASSERT_TRUE(filler && first);
  const nlohmann::json ports = {{"hostport.io/ports", "game=7777/udp"}};
  ASSERT_OK_AND_ASSIGN(auto a, addAs(*filler, "games", "filler", ports));
  ASSERT_THAT(a, Succeeded());  // 41000
  ASSERT_OK_AND_ASSIGN(auto b, addAs(*first, "games", "server-0", ports));
  ASSERT_THAT(b, Succeeded());
  const uint16_t previous = grantedPort(*first, "game", PortProtocol::kUdp);
  EXPECT_EQ(previous, 41001);
  ASSERT_OK_AND_ASSIGN(auto delFiller, delOf(*filler, ports));
  ASSERT_OK_AND_ASSIGN(auto delFirst, delOf(*first, ports));
  ASSERT_THAT(delFiller, Succeeded());
  ASSERT_THAT(delFirst, Succeeded());
  ASSERT_THAT(allLeases(), IsEmpty());

  ASSERT_OK(agent_->restart());
  // The same pod name, a new sandbox and UID: its port, though the lowest free one is 41000.
  Pod* again = bridgedPod("again");
  ASSERT_NE(again, nullptr);
  ASSERT_OK_AND_ASSIGN(auto back, addAs(*again, "games", "server-0", ports));
  ASSERT_THAT(back, Succeeded());
  EXPECT_EQ(grantedPort(*again, "game", PortProtocol::kUdp), previous);
  ASSERT_OK_AND_ASSIGN(auto delAgain, delOf(*again, ports));
  ASSERT_THAT(delAgain, Succeeded());

  ASSERT_OK(agent_->restart());
  nlohmann::json optedOut = ports;
  optedOut["hostport.io/sticky"] = "false";
  Pod* fresh = bridgedPod("fresh");
  ASSERT_NE(fresh, nullptr);
  ASSERT_OK_AND_ASSIGN(auto notBack, addAs(*fresh, "games", "server-0", optedOut));
  ASSERT_THAT(notBack, Succeeded());
  EXPECT_EQ(grantedPort(*fresh, "game", PortProtocol::kUdp), 41000);
}

}  // namespace
}  // namespace hostport::test
