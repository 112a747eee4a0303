// The reconciler over a fake ruleset: what it asks of the ruleset, and under which lock. The
// writer's ruleset owns one netlink socket that carries one request at a time; the soak found a
// pass reading the ruleset generation beside an ADD's batch, which lost the socket for good
// (docs/soak.md). The fake's generation() looks whether the writer's lock is held while it runs.

#include "agent/service/reconciler.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <future>
#include <memory>
#include <set>
#include <thread>

#include "agent/service/forward_writer.h"
#include "forwards/lease_forwards.h"
#include "tests/fakes/fake_host_network.h"
#include "tests/fakes/fake_ruleset.h"
#include "tests/fakes/faulty_file_ops.h"
#include "tests/support/log_capture.h"
#include "tests/support/temp_dir.h"
#include "tests/unit/agent/service/routed_service.h"

namespace hostport::agent::service {
namespace {

using namespace std::chrono_literals;
using ::testing::HasSubstr;

/// A FakeRuleset whose generation() tells whether its caller holds the writer's lock: a thread
/// takes the lock meanwhile, which it can only do when nobody holds it.
class LockCheckingRuleset : public nft::FakeRuleset {
 public:
  Result<std::optional<uint32_t>> generation() override {
    ++reads;
    // A prober of its own per read: a pass may read twice under the lock, and joining the first
    // prober there would wait for the lock the pass holds.
    auto took = std::make_shared<std::atomic<bool>>(false);
    probers_.emplace_back([this, took] {
      auto lock = writer->lock();
      *took = true;
    });
    std::this_thread::sleep_for(100ms);
    if (*took) ++readsWithoutTheLock;
    return std::optional<uint32_t>(7);
  }
  /// Waits for the probers still blocked on the lock (the caller held it); call after the pass.
  void finish() {
    for (std::thread& prober : probers_) prober.join();
    probers_.clear();
  }

  ForwardWriter* writer = nullptr;
  int reads = 0;
  int readsWithoutTheLock = 0;

 private:
  std::vector<std::thread> probers_;
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

/// A ruleset whose generation moves with each of its own writes, as the kernel's does, and whose
/// installs of `swallowed` owners succeed but never show: a repair that cannot converge.
class CountingRuleset : public nft::FakeRuleset {
 public:
  Result<void> install(const nft::AttachmentRules& rules) override {
    ++installs;
    ++generation_;
    if (swallowed.contains(rules.owner)) return {};
    return FakeRuleset::install(rules);
  }
  Result<nft::AttachmentRules> remove(const std::string& owner) override {
    ++generation_;
    return FakeRuleset::remove(owner);
  }
  Result<std::optional<uint32_t>> generation() override {
    return std::optional<uint32_t>(generation_);
  }
  Result<void> scanElements(nft::TableScan& scan) override {
    ++scans;
    return FakeRuleset::scanElements(scan);
  }
  /// Someone else commits something.
  void foreignChange() { ++generation_; }

  std::set<std::string> swallowed;
  int installs = 0;
  int scans = 0;

 private:
  uint32_t generation_ = 1;
};

/// A request for one static TCP port -> 80 of pod 10.88.0.5, with `conditions` for its IPv4
/// forwards.
AllocationRequest forwardedRequest(const std::string& containerId, uint16_t port,
                                   const std::string& conditions = "") {
  AllocationRequest request;
  request.key = {containerId, "eth0"};
  request.pod = {"ns", "pod-" + containerId, ""};
  request.statics.push_back({port, 80, PortProtocol::kTcp, std::nullopt});
  request.forwarding = Forwarding{.network = "net",
                                  .podV4 = IpPrefix{*IpAddress::parse("10.88.0.5"), 16},
                                  .podV6 = std::nullopt,
                                  .snat = true,
                                  .masqAll = false,
                                  .conditionsV4 = conditions,
                                  .conditionsV6 = ""};
  return request;
}

/// The reconciler over a CountingRuleset (no reader of its own: every compare takes the lock),
/// with leases granted through the service as the plugin asks for them.
class ReconcilerRepairTest : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_OK(
        agent_.start(dir_.path(), {{"default", {{30000, 30009}}, {}, core::Strategy::kLowest}}));
    auto owned = std::make_unique<CountingRuleset>();
    table_ = owned.get();
    writer_ = std::make_unique<ForwardWriter>(std::move(owned),
                                              std::make_unique<hostnet::FakeHostNetwork>());
    reconciler_ = std::make_unique<Reconciler>(agent_.service(), *writer_, nullptr, nullptr,
                                               agent_.metrics, ReconcilerOptions{});
  }

  /// A lease with one static TCP port (9101) -> 80 and `conditions` for its IPv4 forwards; its
  /// owner tag.
  std::string grant(const std::string& containerId, const std::string& conditions,
                    uint16_t port = 9101) {
    const auto lease = allocate(forwardedRequest(containerId, port, conditions));
    EXPECT_TRUE(lease.has_value()) << (lease ? "" : lease.error().message);
    return containerId + "/eth0";
  }

  /// The service's answer to `request`, once it is durable.
  Result<Lease> allocate(const AllocationRequest& request) {
    std::promise<Result<Lease>> answer;
    agent_.service().allocate(
        request, [&answer](Result<Lease> lease) { answer.set_value(std::move(lease)); });
    return answer.get_future().get();
  }

  /// A request for static TCP port 9102 -> 80 without a forwarding record ("bare/eth0"): a lease
  /// that forwards nothing, as a hostNetwork pod's.
  static AllocationRequest bareRequest() {
    AllocationRequest bare;
    bare.key = {"bare", "eth0"};
    bare.statics = {{9102, 80, PortProtocol::kTcp, std::nullopt}};
    return bare;
  }

  std::size_t conditionalRules(const std::string& owner) const {
    const auto found = table_->installed.find(owner);
    if (found == table_->installed.end()) return 0;
    return static_cast<std::size_t>(std::ranges::count_if(
        found->second.forwards, [](const nft::Forward& f) { return !f.conditions.empty(); }));
  }

  log::testing::LogCapture log_{log::Level::kInfo};
  test::TempDir dir_;
  testing::RoutedService agent_;
  CountingRuleset* table_ = nullptr;
  std::unique_ptr<ForwardWriter> writer_;
  std::unique_ptr<Reconciler> reconciler_;
};

// A rule of the conditional chain whose owner has no lease (a DEL that could not remove it, the
// agent down at DEL) goes, whatever its conditions hold: the reconciler never reads them.
TEST_F(ReconcilerRepairTest, AnOwnerTaggedRuleWithoutALeaseGoesWhateverItsConditionsHold) {
  nft::AttachmentRules stale{"deadbeef/eth0", {}, {}};
  stale.forwards.push_back({Protocol::kTcp, std::nullopt, 9101, *IpAddress::parse("10.88.0.9"), 80,
                            "tcp dport 1-65535"});
  ASSERT_OK(table_->install(stale));

  const PassReport report = reconciler_->pass(false);

  EXPECT_EQ(report.straysRemoved, 1u);
  EXPECT_FALSE(table_->installed.contains("deadbeef/eth0"))
      << "the next owner of port 9101 would have its traffic taken by this rule";
}

// Every install appends a rule: a lease with conditions whose table is not as planned (a copy too
// many, a masquerade gone) is rewritten whole, never installed over what is there.
TEST_F(ReconcilerRepairTest, ALeaseWithConditionsIsRewrittenToExactlyItsRules) {
  const std::string owner = grant("c1", "ip daddr 192.0.2.1");
  (void)reconciler_->pass(false);
  ASSERT_EQ(conditionalRules(owner), 1u);

  // A copy too many (what the first cut left after a restore loop).
  table_->installed[owner].forwards.push_back(table_->installed[owner].forwards[0]);
  table_->foreignChange();
  (void)reconciler_->pass(false);
  EXPECT_EQ(conditionalRules(owner), 1u);

  // Only the masquerade is gone: the rule must not be added a second time.
  table_->installed[owner].masquerades.clear();
  table_->foreignChange();
  const PassReport report = reconciler_->pass(false);
  EXPECT_EQ(report.leasesRestored, 1u);
  EXPECT_EQ(conditionalRules(owner), 1u);
  EXPECT_EQ(table_->installed[owner].masquerades.size(), 1u);

  for (int i = 0; i < 5; ++i) (void)reconciler_->pass(false);
  EXPECT_EQ(conditionalRules(owner), 1u) << "a table as planned is left alone";
}

// A repair whose write succeeds but which the next compare finds again, with nothing else
// changed, would repeat forever (ten times a second, as each nft write wakes the reconciler). It
// is held back, twice as long each time, and said once.
TEST_F(ReconcilerRepairTest, ARepairThatDoesNotHoldIsNotRepeatedAtEveryPassAndIsLoggedOnce) {
  table_->swallowed.insert("c1/eth0");
  (void)grant("c1", "");

  for (int i = 0; i < 20; ++i) (void)reconciler_->pass(false);

  EXPECT_EQ(table_->installs, 1) << "the repair was repeated at every pass";
  EXPECT_EQ(log_.events("table.repair_not_converging").size(), 1u) << log_.text();
  EXPECT_THAT(log_.text(), HasSubstr("first=\"restore c1/eth0\""));
}

// Someone flushing our map in a loop makes the same repair due again and again; that is no
// proof against the repair, which goes on at every pass.
TEST_F(ReconcilerRepairTest, ARepairUndoneBySomeoneElseIsCarriedOutEveryTime) {
  const std::string owner = grant("c1", "");
  for (int i = 0; i < 5; ++i) {
    table_->installed.erase(owner);
    table_->foreignChange();
    const PassReport report = reconciler_->pass(false);
    EXPECT_EQ(report.leasesRestored, 1u) << i;
    EXPECT_EQ(report.deferred, 0u) << i;
  }
  EXPECT_TRUE(log_.events("table.repair_not_converging").empty());
}

// A flushed table comes back a transaction per batch of leases, not one per lease: at 65,535
// leases that was 3.8 s of commits under the writer's lock.
TEST_F(ReconcilerRepairTest, AFlushedTableComesBackInOneTransactionForManyLeases) {
  for (uint16_t i = 0; i < 40; ++i) (void)grant("c" + std::to_string(i), "", 9200 + i);
  (void)reconciler_->pass(false);
  ASSERT_EQ(table_->installed.size(), 40u);
  table_->installed.clear();
  table_->foreignChange();
  const int before = table_->installManyCalls;

  const PassReport report = reconciler_->pass(false);

  EXPECT_EQ(report.leasesRestored, 40u);
  EXPECT_EQ(table_->installed.size(), 40u);
  EXPECT_EQ(table_->installManyCalls - before, 1);
  const auto restored = log_.events("table.restored");
  EXPECT_FALSE(restored.empty()) << log_.text();
}

/// A reader over the same table as the writer's, as the agent's own second socket is: counts its
/// scans, and can have someone commit while one runs.
class SharedTableReader : public nft::Ruleset {
 public:
  explicit SharedTableReader(CountingRuleset& table) : table_(table) {}
  Result<void> scanElements(nft::TableScan& scan) override {
    if (flushDuringScan) table_.installed.clear();
    if (commitDuringScan || flushDuringScan) table_.foreignChange();
    return table_.scanElements(scan);
  }
  Result<std::optional<uint32_t>> generation() override { return table_.generation(); }
  Result<nft::AttachmentRules> listOwned(const std::string& owner) override {
    return table_.listOwned(owner);
  }
  Result<void> ensureTables() override { return unused(); }
  Result<void> install(const nft::AttachmentRules&) override { return unused(); }
  Result<void> installMany(const std::vector<const nft::AttachmentRules*>&) override {
    return unused();
  }
  Result<nft::AttachmentRules> remove(const std::string&) override { return unused(); }
  Result<void> removeExact(const nft::AttachmentRules&) override { return unused(); }
  Result<nft::AttachmentRules> removeIfOwned(const nft::AttachmentRules&) override {
    return unused();
  }
  Result<void> removePodSubnets(const std::vector<IpPrefix>&) override { return unused(); }

  bool commitDuringScan = false;
  bool flushDuringScan = false;  // someone flushes our map while the dump runs

 private:
  static std::unexpected<Error> unused() {
    ADD_FAILURE() << "the reader writes nothing";
    return std::unexpected(Error{ErrorCode::kInternal, "a reader does not write"});
  }
  CountingRuleset& table_;
};

// What the compare without the lock found is repaired as it is when the ruleset generation, read
// before the leases, has not moved by the time the lock is held: nothing was committed, so a
// second dump (~0.35 s at 65,535 leases, under the lock) would find the same. When it moved, the
// compare is done again under the lock.
TEST_F(ReconcilerRepairTest, AFindingWithNothingCommittedSinceIsRepairedWithoutASecondCompare) {
  for (uint16_t i = 0; i < 3; ++i) (void)grant("c" + std::to_string(i), "", 9200 + i);
  auto owned = std::make_unique<SharedTableReader>(*table_);
  SharedTableReader& reader = *owned;
  Reconciler reconciler(agent_.service(), *writer_, nullptr, std::move(owned), agent_.metrics, {});

  PassReport report = reconciler.pass(false);
  EXPECT_EQ(report.leasesRestored, 3u);
  EXPECT_TRUE(report.underLock);
  EXPECT_EQ(table_->scans, 1) << "compared again though nothing was committed";

  table_->installed.clear();
  reader.commitDuringScan = true;
  table_->foreignChange();
  report = reconciler.pass(false);
  EXPECT_EQ(report.leasesRestored, 3u);
  EXPECT_EQ(table_->scans, 3) << "a commit during the first compare: the lock's compare";
  EXPECT_EQ(table_->installed.size(), 3u);
}

// A flush that lands while a pass dumps (the pass read the generation just before it) is someone
// else's change, not our repair failing to hold: the repairs it calls for are carried out at
// once. (The flush bench found them held back as "not converging", and the table broken for 11 s.)
TEST_F(ReconcilerRepairTest, AFlushDuringTheDumpIsRepairedNotHeldBackAsNotConverging) {
  for (uint16_t i = 0; i < 3; ++i) (void)grant("c" + std::to_string(i), "", 9200 + i);
  auto owned = std::make_unique<SharedTableReader>(*table_);
  SharedTableReader& reader = *owned;
  Reconciler reconciler(agent_.service(), *writer_, nullptr, std::move(owned), agent_.metrics, {});
  ASSERT_EQ(reconciler.pass(false).leasesRestored, 3u);

  reader.flushDuringScan = true;
  const PassReport report = reconciler.pass(false);
  reader.flushDuringScan = false;

  EXPECT_EQ(report.deferred, 0u);
  EXPECT_EQ(report.leasesRestored, 3u);
  EXPECT_EQ(table_->installed.size(), 3u);
  EXPECT_TRUE(log_.events("table.repair_not_converging").empty()) << log_.text();
}

// Repairs the backoff holds back leave the table unlike the leases, so the passes after such a
// pass compare again, and carry them out once their wait is over, instead of reading the unmoved
// generation as "nothing changed" until the compare forced every ten periods.
TEST_F(ReconcilerRepairTest, APassThatHeldRepairsBackIsFollowedByCompares) {
  table_->swallowed.insert("c1/eth0");
  (void)grant("c1", "");
  (void)reconciler_->pass(false);  // restores it; the install is swallowed
  const PassReport holding = reconciler_->pass(false);
  ASSERT_EQ(holding.deferred, 1u) << "found again with nothing else changed: held back";

  const PassReport next = reconciler_->pass(false);
  EXPECT_FALSE(next.unchanged);
  EXPECT_TRUE(next.compared);
}

// Issue 29 item 6: a pod subnet stays only while a lease records it exactly. One that merely
// overlaps a lease's (0.0.0.0/0) masquerades every client toward every snat pod: it goes, and
// the lease's own subnet, which it stood in for, is laid out in the same pass.
TEST_F(ReconcilerRepairTest, ASubnetNoLeaseRecordsExactlyGoesEvenWhenItOverlapsOne) {
  using testing::allocationBody;
  using testing::httpRequest;
  ASSERT_EQ(
      agent_.call(httpRequest("POST", "/v1/attachments", allocationBody("c1", "eth0", "kube")))
          .status,
      200u);
  const IpPrefix own = IpPrefix::parse("10.99.0.0/24").value();  // allocationBody's pod subnet
  const IpPrefix everything = IpPrefix::parse("0.0.0.0/0").value();
  table_->podSubnets = {everything};
  table_->foreignChange();

  const PassReport report = reconciler_->pass(false);

  EXPECT_EQ(report.subnetsRemoved, 1u);
  EXPECT_EQ(report.leasesRestored, 1u);
  EXPECT_EQ(table_->podSubnets, std::vector<IpPrefix>{own});
  table_->podSubnets.push_back(IpPrefix::parse("10.0.0.0/8").value());
  table_->foreignChange();
  EXPECT_EQ(reconciler_->pass(false).subnetsRemoved, 1u) << "a wider one around it goes too";
  EXPECT_EQ(table_->podSubnets, std::vector<IpPrefix>{own});
}

// A lease without a forwarding record forwards nothing and records no subnet; it does not make
// every subnet in the table one that "some lease might need" (once, such a lease's forwards were
// the plugin's, with a subnet nobody here knew, and a forged 0.0.0.0/0 stayed for good).
TEST_F(ReconcilerRepairTest, ALeaseWithoutForwardingKeepsNoSubnetInTheTable) {
  ASSERT_OK(allocate(bareRequest()));
  table_->podSubnets = {IpPrefix::parse("0.0.0.0/0").value()};
  table_->foreignChange();

  const PassReport report = reconciler_->pass(false);

  EXPECT_EQ(report.subnetsRemoved, 1u);
  EXPECT_TRUE(table_->podSubnets.empty());
  EXPECT_TRUE(table_->installed.empty()) << "nothing is laid out for it";
}

// What someone put under the tag of a lease that forwards nothing is not the lease's: removed
// while the lease lives, since its release looks for nothing.
TEST_F(ReconcilerRepairTest, ElementsUnderTheTagOfALeaseThatForwardsNothingAreStrays) {
  ASSERT_OK(allocate(bareRequest()));
  nft::AttachmentRules forged{"bare/eth0", {}, {}};
  forged.forwards.push_back(
      {Protocol::kTcp, std::nullopt, 9102, *IpAddress::parse("10.88.0.9"), 80});
  ASSERT_OK(table_->install(forged));
  table_->foreignChange();

  const PassReport report = reconciler_->pass(false);

  EXPECT_EQ(report.straysRemoved, 1u);
  EXPECT_TRUE(table_->installed.empty());
  EXPECT_EQ(agent_.service().list("", "").size(), 1u) << "the lease stays";
  EXPECT_THAT(log_.text(), HasSubstr("why=\"not in the lease\""));
}

// A lease recorded before the agent checked pod addresses (an older agent took the plugin's word
// for 127.0.0.1/8): its forwards and its subnet go, and are not laid out again; the lease stays
// for its DEL.
TEST_F(ReconcilerRepairTest, ALeaseWithARefusedPodAddressHasItsForwardsRemovedNotRestored) {
  AllocationRequest request;
  request.key = {"c1", "eth0"};
  request.statics = {{9100, 80, PortProtocol::kTcp, std::nullopt}};
  request.forwarding =
      Forwarding{.network = "kube", .podV4 = IpPrefix::parse("127.0.0.1/8").value()};
  ASSERT_OK_AND_ASSIGN(const Lease lease, allocate(request));
  {
    // As the older agent laid it out.
    const auto plan = forwards::planOf(lease);
    ASSERT_TRUE(plan.has_value());
    ASSERT_OK(table_->install(plan->rules));
  }
  ASSERT_EQ(table_->podSubnets, std::vector{IpPrefix::parse("127.0.0.0/8").value()});

  const PassReport report = reconciler_->pass(false);

  EXPECT_EQ(report.leasesRestored, 0u);
  EXPECT_EQ(report.straysRemoved, 1u);
  EXPECT_EQ(report.subnetsRemoved, 1u);
  EXPECT_TRUE(table_->installed.empty());
  EXPECT_TRUE(table_->podSubnets.empty());
  EXPECT_EQ(agent_.service().list("", "").size(), 1u) << "the lease waits for its DEL";
  EXPECT_EQ(reconciler_->pass(false).leasesRestored, 0u) << "and is never laid out again";
  EXPECT_TRUE(table_->installed.empty());
}

// A grant or a release whose journal record is being written has its table write queued behind
// that record: the lease is in the allocator without its forwards, or gone with them still in.
// The reconciler leaves such an owner to its write. Judged, a release's forwards were removed as
// strays and a grant's laid out as missing: a warning and a repair counted wherever a pass met
// the window, which a node under pod churn hits every few seconds.
TEST(ReconcilerSettlingTest, AnAttachmentWhoseTableWriteIsQueuedIsLeftToThatWrite) {
  log::testing::LogCapture log{log::Level::kInfo};
  test::TempDir dir;
  auto files = std::make_shared<store::FaultyFileOps>();
  auto owned = std::make_unique<nft::FakeRuleset>();
  nft::FakeRuleset& table = *owned;
  ForwardWriter writer(std::move(owned), std::make_unique<hostnet::FakeHostNetwork>());
  testing::RoutedService agent;
  ASSERT_OK(agent.start(dir.path(), {{"default", {{30000, 30009}}, {}, core::Strategy::kLowest}},
                        {.fileOps = files}, {.writer = &writer}));
  const auto allocate = [&agent](const AllocationRequest& request) {
    auto answer = std::make_shared<std::promise<Result<Lease>>>();
    agent.service().allocate(
        request, [answer](Result<Lease> lease) { answer->set_value(std::move(lease)); });
    return answer->get_future();
  };
  const AllocationRequest leaving = forwardedRequest("c1", 9101);
  ASSERT_OK(allocate(leaving).get());
  ASSERT_TRUE(table.installed.contains("c1/eth0"));
  Reconciler reconciler(agent.service(), writer, nullptr, nullptr, agent.metrics, {});

  files->holdSyncs();
  std::promise<Result<std::optional<Lease>>> releaseAnswer;
  agent.service().release(leaving.key, [&releaseAnswer](Result<std::optional<Lease>> released) {
    releaseAnswer.set_value(std::move(released));
  });
  ASSERT_TRUE(files->waitForHeldSync(std::chrono::steady_clock::now() + 10s));
  auto granted = allocate(forwardedRequest("c2", 9102));
  const PassReport during = reconciler.pass(false);
  files->releaseSyncs();

  EXPECT_EQ(during.straysRemoved, 0u) << log.text();
  EXPECT_EQ(during.leasesRestored, 0u) << log.text();
  EXPECT_TRUE(log.events("table.stray_removed").empty()) << log.text();
  EXPECT_TRUE(log.events("table.restored").empty()) << log.text();
  ASSERT_OK(releaseAnswer.get_future().get());
  ASSERT_OK(granted.get());
  EXPECT_FALSE(table.installed.contains("c1/eth0")) << "the release removed them";
  EXPECT_TRUE(table.installed.contains("c2/eth0")) << "the grant installed them";
  EXPECT_TRUE(agent.service().forEachLeaseChunk([](std::span<const Lease>) {}).empty());
  const PassReport after = reconciler.pass(false);
  EXPECT_TRUE(after.compared);
  EXPECT_EQ(after.straysRemoved + after.leasesRestored, 0u);
}

}  // namespace
}  // namespace hostport::agent::service
