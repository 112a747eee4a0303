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
  nft::AttachmentPlan plan(bool snat) {
    nft::PodTarget target;
    target.v4 = *IpPrefix::parse("10.88.0.5/16");
    target.snat = snat;
    auto planned = nft::planAttachment(
        "c0ffee/eth0",
        {{8080, 80, Protocol::kTcp, std::nullopt}, {53, 53, Protocol::kUdp, std::nullopt}}, target);
    EXPECT_TRUE(planned.has_value());
    return *planned;
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
  EXPECT_EQ(network_.flushedPorts, std::vector<uint16_t>{53});
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
  EXPECT_EQ(report_.lines, std::vector<std::string>{"flush 53: cannot flush conntrack"});
  EXPECT_TRUE(rules_.installed.contains("c0ffee/eth0"));
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
