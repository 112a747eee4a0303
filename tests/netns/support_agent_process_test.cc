// tests/support/agent_process.h with the built agent: a private netns per run (distinct per agent,
// lo up), refusing to start an agent in the host's netns, SIGKILL without reaping, and the log of
// the current run.

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <sys/stat.h>

#include <fstream>
#include <sstream>
#include <string>

#include "tests/support/agent_process.h"
#include "tests/support/netns.h"
#include "tests/support/result_assertions.h"

#ifndef HOSTPORT_AGENT_PATH
#error "HOSTPORT_AGENT_PATH must name the hostport-agent binary"
#endif

namespace hostport::test {
namespace {

using ::testing::HasSubstr;

constexpr std::string_view kBanner = "=== test harness: starting ";

/// The inode of the netns that `nsLink` (/proc/<pid>/ns/net) names; 0 when it cannot be read.
ino_t netnsInode(const std::string& nsLink) {
  struct stat info {};
  return ::stat(nsLink.c_str(), &info) == 0 ? info.st_ino : 0;
}

std::size_t count(const std::string& text, std::string_view what) {
  std::size_t n = 0;
  for (auto at = text.find(what); at != std::string::npos; at = text.find(what, at + 1)) ++n;
  return n;
}

class AgentProcessTest : public ::testing::Test {
 protected:
  void SetUp() override { HOSTPORT_SKIP_UNLESS_ROOT(); }

  static AgentOptions privateAgent() {
    return {.reserveLocalPorts = false, .logLevel = "info", .privateNetns = true};
  }
};

TEST_F(AgentProcessTest, PrivateNetnsRunsEveryRunOutsideTheTestsNetns) {
  const ino_t ours = netnsInode("/proc/self/ns/net");
  ASSERT_NE(ours, 0u);
  ASSERT_OK_AND_ASSIGN(auto agent, AgentProcess::start(HOSTPORT_AGENT_PATH, privateAgent()));
  const ino_t first = netnsInode("/proc/" + std::to_string(agent->pid()) + "/ns/net");
  EXPECT_NE(first, 0u);
  EXPECT_NE(first, ours);

  ASSERT_OK(agent->restart());
  const ino_t second = netnsInode("/proc/" + std::to_string(agent->pid()) + "/ns/net");
  EXPECT_NE(second, 0u);
  EXPECT_NE(second, ours);
  ASSERT_OK(agent->client().getText("/readyz"));
}

TEST_F(AgentProcessTest, TwoPrivateNetnsAgentsRunInDistinctNetns) {
  ASSERT_OK_AND_ASSIGN(auto first, AgentProcess::start(HOSTPORT_AGENT_PATH, privateAgent()));
  ASSERT_OK_AND_ASSIGN(auto second, AgentProcess::start(HOSTPORT_AGENT_PATH, privateAgent()));
  // Both run at once, so neither netns can have been freed and its inode reused.
  const ino_t firstNetns = netnsInode("/proc/" + std::to_string(first->pid()) + "/ns/net");
  const ino_t secondNetns = netnsInode("/proc/" + std::to_string(second->pid()) + "/ns/net");
  ASSERT_NE(firstNetns, 0u);
  ASSERT_NE(secondNetns, 0u);
  EXPECT_NE(firstNetns, secondNetns);
  EXPECT_NE(firstNetns, netnsInode("/proc/self/ns/net"));
  EXPECT_NE(secondNetns, netnsInode("/proc/self/ns/net"));
  ASSERT_OK(first->client().getText("/readyz"));
  ASSERT_OK(second->client().getText("/readyz"));
}

TEST_F(AgentProcessTest, PrivateNetnsHasLoopbackUp) {
  ASSERT_OK_AND_ASSIGN(auto agent, AgentProcess::start(HOSTPORT_AGENT_PATH, privateAgent()));
  // The kernel gives lo its ::1 only once lo is up; a fresh netns lists no address at all.
  std::ifstream in("/proc/" + std::to_string(agent->pid()) + "/net/if_inet6");
  std::stringstream addresses;
  addresses << in.rdbuf();
  EXPECT_THAT(addresses.str(), HasSubstr("00000000000000000000000000000001 01 80 10 80       lo"));
}

TEST_F(AgentProcessTest, RefusesAnAgentWithoutANetnsOrWithTwo) {
  auto hostNetns = AgentProcess::start(HOSTPORT_AGENT_PATH, AgentOptions{});
  ASSERT_FALSE(hostNetns.has_value()) << "an agent started in the host's netns";
  EXPECT_EQ(hostNetns.error().code, ErrorCode::kInvalidArgument);
  EXPECT_THAT(hostNetns.error().message, HasSubstr("privateNetns"));

  ASSERT_OK_AND_ASSIGN(const Netns netns, Netns::create());
  auto both = AgentProcess::start(HOSTPORT_AGENT_PATH, netns, privateAgent());
  ASSERT_FALSE(both.has_value()) << "an agent started with a Netns and privateNetns";
  EXPECT_EQ(both.error().code, ErrorCode::kInvalidArgument);
  EXPECT_THAT(both.error().message, HasSubstr(netns.name()));
}

TEST_F(AgentProcessTest, KillWithoutReapingLeavesTheReapToReap) {
  ASSERT_OK_AND_ASSIGN(auto agent, AgentProcess::start(HOSTPORT_AGENT_PATH, privateAgent()));
  const pid_t pid = agent->pid();
  ASSERT_OK(agent->killWithoutReaping());
  EXPECT_EQ(agent->pid(), pid) << "not reaped yet";
  ASSERT_OK_AND_ASSIGN(const std::string ended, agent->reap());
  EXPECT_EQ(ended, "killed by signal 9");
  EXPECT_FALSE(agent->running());
  EXPECT_EQ(agent->reap().value_or("an error"), "killed by signal 9")
      << "reaping again only repeats the answer";

  const auto again = agent->killWithoutReaping();
  ASSERT_FALSE(again.has_value());
  EXPECT_EQ(again.error().code, ErrorCode::kNotFound);

  ASSERT_OK(agent->restart());
  EXPECT_TRUE(agent->running());
}

TEST_F(AgentProcessTest, RunLogHoldsOnlyTheCurrentRun) {
  ASSERT_OK_AND_ASSIGN(auto agent, AgentProcess::start(HOSTPORT_AGENT_PATH, privateAgent()));
  EXPECT_EQ(count(agent->runLog(), kBanner), 1u) << agent->runLog();
  ASSERT_OK(agent->restart());
  EXPECT_EQ(count(agent->log(), kBanner), 2u) << agent->log();
  EXPECT_EQ(count(agent->runLog(), kBanner), 1u) << agent->runLog();
  EXPECT_TRUE(agent->runLog().starts_with(kBanner)) << agent->runLog();
}

}  // namespace
}  // namespace hostport::test
