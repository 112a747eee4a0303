// The reconciler over a fake ruleset: what it asks of the ruleset, and under which lock. The
// writer's ruleset owns one netlink socket that carries one request at a time; the soak found a
// pass reading the ruleset generation beside an ADD's batch, which lost the socket for good
// (docs/soak.md). The fake's generation() looks whether the writer's lock is held while it runs.

#include "agent/service/reconciler.h"

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <future>
#include <memory>
#include <thread>

#include "agent/forwards/lease_forwards.h"
#include "agent/service/forward_writer.h"
#include "tests/fakes/fake_host_network.h"
#include "tests/fakes/fake_ruleset.h"
#include "tests/support/temp_dir.h"
#include "tests/unit/agent/service/routed_service.h"

namespace hostport::agent::service {
namespace {

using namespace std::chrono_literals;

/// A FakeRuleset whose generation() tells whether its caller holds the writer's lock: a thread
/// takes the lock meanwhile, which it can only do when nobody holds it.
class LockCheckingRuleset : public nft::FakeRuleset {
 public:
  Result<std::optional<uint32_t>> generation() override {
    ++reads;
    finish();
    took_ = false;
    prober_ = std::thread([this] {
      auto lock = writer->lock();
      took_ = true;
    });
    std::this_thread::sleep_for(100ms);
    if (took_) ++readsWithoutTheLock;
    return std::optional<uint32_t>(7);
  }
  /// Waits for a prober still blocked on the lock (the caller held it); call after the pass.
  void finish() {
    if (prober_.joinable()) prober_.join();
  }

  ForwardWriter* writer = nullptr;
  int reads = 0;
  int readsWithoutTheLock = 0;

 private:
  std::thread prober_;
  std::atomic<bool> took_{false};
};

/// An agent over fake kernels whose writer's ruleset is a LockCheckingRuleset.
class ReconcilerTest : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_OK(
        agent_.start(dir_.path(), {{"default", {{30000, 30009}}, {}, core::Strategy::kLowest}}));
    auto owned = std::make_unique<LockCheckingRuleset>();
    ruleset_ = owned.get();
    writer_ = std::make_unique<ForwardWriter>(std::move(owned),
                                              std::make_unique<hostnet::FakeHostNetwork>());
    ruleset_->writer = writer_.get();
  }
  /// One pass of a reconciler with `reader` (may be null), then the prober joined.
  PassReport passWith(std::unique_ptr<nft::Ruleset> reader) {
    Reconciler reconciler(agent_.service(), *writer_, nullptr, std::move(reader), agent_.metrics,
                          {});
    const PassReport report = reconciler.pass(/*releaseVanished=*/false);
    ruleset_->finish();
    return report;
  }

  test::TempDir dir_;
  testing::RoutedService agent_;
  LockCheckingRuleset* ruleset_ = nullptr;
  std::unique_ptr<ForwardWriter> writer_;
};

TEST_F(ReconcilerTest, ReadsTheRulesetGenerationUnderTheWritersLock) {
  (void)passWith(nullptr);

  ASSERT_GE(ruleset_->reads, 1) << "the pass never read the ruleset generation";
  EXPECT_EQ(ruleset_->readsWithoutTheLock, 0)
      << "the ruleset generation was read without the writer's lock: an ADD's batch on the same "
         "netlink socket can take its reply";
}

// With a socket of its own (the agent's wiring), the reconciler reads the generation and compares
// there: a pass that finds nothing to repair never asks the writer's socket.
TEST_F(ReconcilerTest, WithAReaderOfItsOwnAPassThatFindsNothingLeavesTheWritersSocketAlone) {
  const PassReport report = passWith(std::make_unique<nft::FakeRuleset>());

  EXPECT_TRUE(report.compared);
  EXPECT_FALSE(report.underLock);
  EXPECT_EQ(ruleset_->reads, 0) << "the writer's socket was asked for the generation";
}

// Issue 29 item 6: a pod subnet stays only while a lease records it exactly. One that merely
// overlaps a lease's (0.0.0.0/0) masquerades every client toward every snat pod: it goes, and
// the lease's own subnet, which it stood in for, is laid out in the same pass.
TEST_F(ReconcilerTest, ASubnetNoLeaseRecordsExactlyGoesEvenWhenItOverlapsOne) {
  using testing::allocationBody;
  using testing::httpRequest;
  ASSERT_EQ(
      agent_.call(httpRequest("POST", "/v1/attachments", allocationBody("c1", "eth0", "kube")))
          .status,
      200u);
  const IpPrefix own = IpPrefix::parse("10.99.0.0/24").value();  // allocationBody's pod subnet
  const IpPrefix everything = IpPrefix::parse("0.0.0.0/0").value();
  ruleset_->podSubnets = {everything};

  const PassReport report = passWith(nullptr);

  EXPECT_EQ(report.subnetsRemoved, 1u);
  EXPECT_EQ(report.leasesRestored, 1u);
  EXPECT_EQ(ruleset_->podSubnets, std::vector<IpPrefix>{own});
  ruleset_->podSubnets.push_back(IpPrefix::parse("10.0.0.0/8").value());
  EXPECT_EQ(passWith(nullptr).subnetsRemoved, 1u) << "a wider one around it goes too";
  EXPECT_EQ(ruleset_->podSubnets, std::vector<IpPrefix>{own});
}

// A lease recorded before the agent checked pod addresses (an older agent took the plugin's word
// for 127.0.0.1/8): its forwards and its subnet go, and are not laid out again; the lease stays
// for its DEL.
TEST_F(ReconcilerTest, ALeaseWithARefusedPodAddressHasItsForwardsRemovedNotRestored) {
  AllocationRequest request;
  request.key = {"c1", "eth0"};
  request.statics = {{9100, 80, PortProtocol::kTcp, std::nullopt}};
  request.forwarding =
      Forwarding{.network = "kube", .podV4 = IpPrefix::parse("127.0.0.1/8").value()};
  std::promise<Result<Lease>> granted;
  agent_.service().allocate(request, [&](Result<Lease> lease) { granted.set_value(lease); });
  ASSERT_OK_AND_ASSIGN(const Lease lease, granted.get_future().get());
  {
    // As the older agent laid it out.
    const auto plan = forwards::planOf(lease);
    ASSERT_TRUE(plan.has_value());
    ASSERT_OK(ruleset_->install(plan->rules));
  }
  ASSERT_EQ(ruleset_->podSubnets, std::vector{IpPrefix::parse("127.0.0.0/8").value()});

  const PassReport report = passWith(nullptr);

  EXPECT_EQ(report.leasesRestored, 0u);
  EXPECT_EQ(report.straysRemoved, 1u);
  EXPECT_EQ(report.subnetsRemoved, 1u);
  EXPECT_TRUE(ruleset_->installed.empty());
  EXPECT_TRUE(ruleset_->podSubnets.empty());
  EXPECT_EQ(agent_.service().list("", "").size(), 1u) << "the lease waits for its DEL";
  EXPECT_EQ(passWith(nullptr).leasesRestored, 0u) << "and is never laid out again";
  EXPECT_TRUE(ruleset_->installed.empty());
}

}  // namespace
}  // namespace hostport::agent::service
