// Writing a plan is the same for the agent and the plugin: all of it or none of it, and what
// fails without failing the write is reported, not swallowed.

#include "forwards/plan_writer.h"

#include <gtest/gtest.h>

#include "tests/fakes/fake_host_network.h"
#include "tests/fakes/fake_ruleset.h"
#include "tests/support/result_assertions.h"

namespace hostport::forwards {
namespace {

class RecordingReport : public WriteReport {
 public:
  void rollbackFailed(const Error& cause) override {
    lines.push_back("rollback: " + cause.message);
  }
  void conntrackFlushFailed(uint16_t port, const Error& cause) override {
    lines.push_back("flush " + std::to_string(port) + ": " + cause.message);
  }
  std::vector<std::string> lines;
};

class PlanWriterTest : public ::testing::Test {
 protected:
  nft::AttachmentPlan plan(bool snat) { return planFor("c0ffee/eth0", "10.88.0.5", 8080, snat); }
  /// One pod at `address`: tcp hostPort -> 80 and udp hostPort + 1 -> 53.
  nft::AttachmentPlan planFor(const std::string& owner, const std::string& address,
                              uint16_t hostPort, bool snat = true) {
    nft::PodTarget target;
    target.v4 = *IpPrefix::parse(address + "/16");
    target.snat = snat;
    auto planned = nft::planAttachment(
        owner,
        {{hostPort, 80, Protocol::kTcp, std::nullopt},
         {static_cast<uint16_t>(hostPort + 1), 53, Protocol::kUdp, std::nullopt}},
        target);
    EXPECT_TRUE(planned.has_value());
    return *planned;
  }
  std::vector<nft::AttachmentPlan> threePods() {
    return {planFor("a/eth0", "10.88.0.5", 8080), planFor("b/eth0", "10.88.0.6", 8090),
            planFor("c/eth0", "10.88.0.7", 9000)};
  }
  HostNetworkAccess access() {
    return [this]() -> Result<hostnet::HostNetwork*> {
      ++opened_;
      return &network_;
    };
  }

  nft::FakeRuleset rules_;
  hostnet::FakeHostNetwork network_;
  RecordingReport report_;
  int opened_ = 0;
};

TEST_F(PlanWriterTest, InstallsThenSetsRouteLocalnetThenFlushesUdp) {
  ASSERT_OK(writePlan(plan(true), rules_, access(), report_));
  EXPECT_EQ(rules_.installed.at("c0ffee/eth0").forwards.size(), 2u);
  EXPECT_EQ(network_.localnetFor, std::vector<std::string>{"10.88.0.5"});
  EXPECT_EQ(network_.flushedPorts, std::vector<uint16_t>{8081});
  EXPECT_TRUE(report_.lines.empty());
}

TEST_F(PlanWriterTest, AFailedRouteLocalnetTakesTheRulesBack) {
  network_.failLocalnet = true;
  auto written = writePlan(plan(true), rules_, access(), report_);
  ASSERT_FALSE(written);
  EXPECT_NE(written.error().message.find("enabling route_localnet"), std::string::npos);
  EXPECT_FALSE(rules_.installed.contains("c0ffee/eth0")) << "no attachment half installed";
  EXPECT_EQ(rules_.removeExactCalls, 1) << "by key, not by listing";
  EXPECT_TRUE(network_.flushedPorts.empty());
}

TEST_F(PlanWriterTest, AFailedFlushIsReportedAndTheWriteStands) {
  network_.failFlush = true;
  ASSERT_OK(writePlan(plan(false), rules_, access(), report_));
  EXPECT_TRUE(network_.localnetFor.empty()) << "snat off: no localhost forward";
  EXPECT_EQ(report_.lines, std::vector<std::string>{"flush 8081: cannot flush conntrack"});
  EXPECT_TRUE(rules_.installed.contains("c0ffee/eth0"));
}

TEST_F(PlanWriterTest, ManyPlansAreOneTransactionOneRouteLocalnetAndOneFlush) {
  const auto plans = threePods();
  const auto results = writePlans(plans, rules_, access(), report_);
  ASSERT_EQ(results.size(), 3u);
  for (const auto& result : results) EXPECT_OK(result);
  EXPECT_EQ(rules_.installManyCalls, 1);
  EXPECT_EQ(rules_.installed.size(), 3u);
  EXPECT_EQ(network_.localnetCalls, 1) << "every pod's route_localnet in one call";
  EXPECT_EQ(network_.localnetFor,
            (std::vector<std::string>{"10.88.0.5", "10.88.0.6", "10.88.0.7"}));
  EXPECT_EQ(network_.flushedPorts, (std::vector<uint16_t>{8081, 8091, 9001}));
  EXPECT_TRUE(report_.lines.empty());
}

TEST_F(PlanWriterTest, ARefusedTransactionIsWrittenPlanByPlanSoEachSaysWhy) {
  rules_.conflict = true;
  const auto results = writePlans(threePods(), rules_, access(), report_);
  ASSERT_EQ(results.size(), 3u);
  for (const auto& result : results) {
    ASSERT_FALSE(result);
    EXPECT_EQ(result.error().code, ErrorCode::kConflict) << result.error().message;
  }
  EXPECT_TRUE(rules_.installed.empty());
  EXPECT_TRUE(network_.flushedPorts.empty());
}

TEST_F(PlanWriterTest, ARefusedRouteLocalnetTakesBackOnlyThePodsWhoseInterfaceRefusesIt) {
  network_.refuseLocalnetFor = {"10.88.0.6"};
  const auto results = writePlans(threePods(), rules_, access(), report_);
  ASSERT_EQ(results.size(), 3u);
  EXPECT_OK(results[0]);
  ASSERT_FALSE(results[1]);
  EXPECT_NE(results[1].error().message.find("enabling route_localnet"), std::string::npos);
  EXPECT_OK(results[2]);
  EXPECT_TRUE(rules_.installed.contains("a/eth0"));
  EXPECT_FALSE(rules_.installed.contains("b/eth0")) << "no attachment half installed";
  EXPECT_TRUE(rules_.installed.contains("c/eth0"));
  EXPECT_EQ(network_.flushedPorts, (std::vector<uint16_t>{8081, 9001}));
}

TEST_F(PlanWriterTest, OpensTheHostNetworkOnlyWhenThePlanNeedsIt) {
  flushUdpConntrack({}, access(), report_);
  ASSERT_OK(writePlan(nft::AttachmentPlan{}, rules_, access(), report_));
  EXPECT_EQ(opened_, 0);
  const HostNetworkAccess broken = []() -> Result<hostnet::HostNetwork*> {
    return fail(ErrorCode::kKernel, "no netlink");
  };
  flushUdpConntrack({53, 5353}, broken, report_);
  EXPECT_EQ(report_.lines,
            (std::vector<std::string>{"flush 53: no netlink", "flush 5353: no netlink"}));
}

TEST_F(PlanWriterTest, RefusesATargetTheNodeHoldsItself) {
  network_.localAddresses = {"10.88.0.5"};
  const auto refused = refuseNodeTargets(plan(true), access());
  ASSERT_FALSE(refused);
  EXPECT_EQ(refused.error().code, ErrorCode::kInvalidArgument);
  EXPECT_NE(refused.error().message.find("pod address 10.88.0.5 is an address of this node"),
            std::string::npos)
      << refused.error().message;

  network_.localAddresses = {"10.88.0.1"};
  EXPECT_OK(refuseNodeTargets(plan(true), access()));
  network_.failLocalLookup = true;
  const auto unknown = refuseNodeTargets(plan(true), access());
  ASSERT_FALSE(unknown);
  EXPECT_EQ(unknown.error().code, ErrorCode::kKernel) << "an unanswered lookup is no verdict";
  opened_ = 0;
  EXPECT_OK(refuseNodeTargets(nft::AttachmentPlan{}, access()));
  EXPECT_EQ(opened_, 0) << "nothing to check, nothing opened";
}

}  // namespace
}  // namespace hostport::forwards
