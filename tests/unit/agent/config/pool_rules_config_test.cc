// Pool rules in the config file (namespaces, maxPortsPerNamespace, maxPortsPerPod), what a
// reload may change (config_reload.h), the reloader and the file watch that drives it.

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <condition_variable>
#include <filesystem>
#include <fstream>
#include <mutex>

#include "agent/config/agent_config.h"
#include "agent/config/config_reload.h"
#include "agent/config/config_reloader.h"
#include "agent/config/config_watch.h"
#include "tests/support/result_assertions.h"
#include "tests/support/temp_dir.h"

namespace hostport::agent::config {
namespace {

using ::testing::HasSubstr;

Result<AgentConfig> loadFinal(std::string_view yaml) {
  AgentConfig config;
  HOSTPORT_TRY_VOID(applyYamlConfig(yaml, "config.yaml", config));
  HOSTPORT_TRY_VOID(finalizeConfig(config));
  return config;
}

std::string errorOf(std::string_view yaml) {
  const auto config = loadFinal(yaml);
  return config ? std::string("(no error)") : config.error().message;
}

constexpr std::string_view kGames = R"(
pools:
  games:
    ranges: ["40000-40099"]
    namespaces: ["games-*", "media"]
    maxPortsPerNamespace: 50
    maxPortsPerPod: 4
)";

TEST(PoolRulesConfigTest, ReadsNamespacesAndQuotas) {
  ASSERT_OK_AND_ASSIGN(const AgentConfig config, loadFinal(kGames));
  ASSERT_EQ(config.pools.size(), 1u);
  EXPECT_EQ(config.pools[0].rules, (core::PoolRules{{"games-*", "media"}, 50, 4}));
  ASSERT_OK_AND_ASSIGN(const AgentConfig plain, loadFinal("pools: {a: {ranges: [\"1000\"]}}"));
  EXPECT_TRUE(plain.pools[0].rules.empty());
}

TEST(PoolRulesConfigTest, NamesTheFieldAndTheValueOfABadRule) {
  EXPECT_EQ(errorOf("pools: {g: {ranges: [\"1000\"], namespaces: [\"Games_*\"]}}"),
            "config.yaml: pools.g.namespaces[0]: \"Games_*\" must be a namespace name (a DNS "
            "label) in which '*' may stand for any characters");
  EXPECT_THAT(errorOf("pools: {g: {ranges: [\"1000\"], namespaces: []}}"),
              HasSubstr("pools.g.namespaces: must be a non-empty list"));
  EXPECT_THAT(errorOf("pools: {g: {ranges: [\"1000\"], namespaces: media}}"),
              HasSubstr("pools.g.namespaces: must be a non-empty list"));
  EXPECT_EQ(errorOf("pools: {g: {ranges: [\"1000\"], maxPortsPerPod: 0}}"),
            "config.yaml: pools.g.maxPortsPerPod: \"0\" is below 1");
  EXPECT_EQ(errorOf("pools: {g: {ranges: [\"1000\"], maxPortsPerNamespace: lots}}"),
            "config.yaml: pools.g.maxPortsPerNamespace: \"lots\" is not a whole number");
}

TEST(ConfigReloadTest, AppliesRulesAndNamesWhatNeedsARestart) {
  ASSERT_OK_AND_ASSIGN(const AgentConfig running, loadFinal(kGames));
  ASSERT_OK_AND_ASSIGN(const AgentConfig next, loadFinal(R"(
socket: /run/other.sock
pools:
  games:
    ranges: ["40000-40049"]
    namespaces: ["games-*"]
  media:
    ranges: ["41000-41009"]
)"));
  const ReloadPlan plan = planReload(running, next);
  ASSERT_EQ(plan.rules.size(), 1u);
  EXPECT_EQ(plan.rules[0].first, "games");
  EXPECT_EQ(plan.rules[0].second, (core::PoolRules{{"games-*"}, {}, {}}));
  EXPECT_EQ(plan.needRestart,
            (std::vector<std::string>{"socket", "pools.games.ranges", "pools.media (added)"}));

  AgentConfig applied = running;
  applyPlan(applied, plan);
  EXPECT_EQ(applied.pools[0].rules, plan.rules[0].second);
  EXPECT_EQ(applied.pools[0].ranges, running.pools[0].ranges);  // ranges wait for a restart
  EXPECT_EQ(applied.socketPath, running.socketPath);
}

TEST(ConfigReloadTest, APoolsScopeNeedsARestart) {
  ASSERT_OK_AND_ASSIGN(const AgentConfig running, loadFinal(kGames));
  ASSERT_OK_AND_ASSIGN(const AgentConfig next,
                       loadFinal(std::string(kGames) + "    scope: cluster\n"));
  EXPECT_EQ(planReload(running, next).needRestart, (std::vector<std::string>{"pools.games.scope"}));
}

TEST(ConfigReloadTest, TheClusterAndPodSocketKeysNeedARestart) {
  ASSERT_OK_AND_ASSIGN(const AgentConfig running, loadFinal(kGames));
  ASSERT_OK_AND_ASSIGN(const AgentConfig next, loadFinal(std::string(kGames) + R"(
podSocket: /run/other/pod.sock
kubeconfig: /etc/kubeconfig
nodeName: node-2
apiQps: 7
apiBurst: 20
capacitySeconds: 0
publishSettleMs: 1000
watchPods: false
)"));
  EXPECT_EQ(planReload(running, next).needRestart,
            (std::vector<std::string>{"podSocket", "kubeconfig", "nodeName", "apiQps", "apiBurst",
                                      "capacitySeconds", "publishSettleMs", "watchPods"}));
}

TEST(ConfigReloadTest, FindsNothingToDoInTheSameConfig) {
  ASSERT_OK_AND_ASSIGN(const AgentConfig running, loadFinal(kGames));
  EXPECT_TRUE(planReload(running, running).empty());
  ASSERT_OK_AND_ASSIGN(const AgentConfig without, loadFinal("pools: {other: {ranges: [\"1\"]}}"));
  EXPECT_EQ(planReload(running, without).needRestart,
            (std::vector<std::string>{"pools.games (removed)", "pools.other (added)"}));
}

class ConfigReloaderTest : public ::testing::Test {
 protected:
  void write(std::string_view text) {
    // As a ConfigMap does: a new file renamed over the old, never a partial one.
    const auto tmp = dir_ / "agent.yaml.tmp";
    std::ofstream(tmp) << text;
    std::filesystem::rename(tmp, path());
  }
  std::filesystem::path path() const { return dir_ / "agent.yaml"; }

  ConfigReloader reloader(const AgentConfig& running) {
    CommandLine flags;
    flags.configPath = path();
    return ConfigReloader(flags, running, [this](const std::string& pool, core::PoolRules rules) {
      applied_.emplace_back(pool, std::move(rules));
      return Result<void>{};
    });
  }

  test::TempDir dir_;
  std::vector<std::pair<std::string, core::PoolRules>> applied_;
};

TEST_F(ConfigReloaderTest, AppliesNewRulesAndKeepsTheRunningConfigOnABadFile) {
  write(kGames);
  ASSERT_OK_AND_ASSIGN(const AgentConfig running, resolveConfig({.configPath = path()}));
  auto reloads = reloader(running);

  write("pools: {games: {ranges: [\"40000-40099\"], namespaces: [\"media\"]}}");
  ASSERT_OK(reloads.reload("signal"));
  ASSERT_EQ(applied_.size(), 1u);
  EXPECT_EQ(applied_[0].second.namespaces, std::vector<std::string>{"media"});
  EXPECT_EQ(reloads.running().pools[0].rules.namespaces, std::vector<std::string>{"media"});

  write("pools: {games: {ranges: [\"40000-40099\"], namespaces: [\"Bad\"]}}");
  EXPECT_FALSE(reloads.reload("file").has_value());
  write("pools: [not yaml");
  EXPECT_FALSE(reloads.reload("file").has_value());
  EXPECT_EQ(applied_.size(), 1u);  // nothing applied from either
  EXPECT_EQ(reloads.running().pools[0].rules.namespaces, std::vector<std::string>{"media"});
}

TEST_F(ConfigReloaderTest, WatchCallsBackWhenTheFileTextChanges) {
  write(kGames);
  std::mutex mutex;
  std::condition_variable changed;
  int calls = 0;
  {
    ASSERT_OK_AND_ASSIGN(auto watch, ConfigWatch::start(
                                         path(),
                                         [&] {
                                           std::lock_guard lock(mutex);
                                           ++calls;
                                           changed.notify_all();
                                         },
                                         std::chrono::milliseconds(20)));
    std::ofstream(dir_ / "unrelated") << "x";  // a change in the dir that leaves the file alone
    write("pools: {games: {ranges: [\"40000-40099\"]}}");
    std::unique_lock lock(mutex);
    // Bounded only so that a broken watch fails instead of hanging the suite.
    ASSERT_TRUE(changed.wait_for(lock, std::chrono::seconds(30), [&] { return calls > 0; }));
  }
  EXPECT_EQ(calls, 1);
}

}  // namespace
}  // namespace hostport::agent::config
