// Start-up recovery (agent/daemon/recovery.h): the leases a store holds come back into a new
// allocator, what recovery found is logged as store.recovered, and a lease that does not fit the
// pools stops the agent rather than being forgotten.

#include "agent/daemon/recovery.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <future>

#include "tests/support/log_capture.h"
#include "tests/support/result_assertions.h"
#include "tests/support/temp_dir.h"
#include "tests/unit/agent/store/store_test_util.h"

namespace hostport::agent::daemon {
namespace {

using log::testing::LogCapture;
using store::LeaseStore;
using test::TempDir;
using ::testing::HasSubstr;
using ::testing::StartsWith;

std::vector<core::PoolSpec> pools() {
  return {{"default", {{30000, 30009}}, {}, core::Strategy::kLowest}};
}

Lease lease(const std::string& containerId, uint16_t hostPort, std::string pool = "default") {
  return Lease{{containerId, "eth0"},
               {"ns", "pod-" + containerId, ""},
               "/run/netns/" + containerId,
               std::move(pool),
               {PortGrant{"web", PortProtocol::kTcp, hostPort, 80, 1, std::nullopt, false}}};
}

class RecoveryTest : public ::testing::Test {
 protected:
  /// Writes `leases` as grants through a store of their own, closed again before returning.
  void writeGrants(const std::vector<Lease>& leases) { writeRecords(leases, {}); }

  /// Grants each of `granted`, then releases each of `released`, through a store of their own.
  void writeRecords(const std::vector<Lease>& granted, const std::vector<Lease>& released) {
    auto opened = LeaseStore::open(dir_.path());
    ASSERT_OK(opened);
    ASSERT_OK((*opened)->recover());
    for (const auto& [leases, kind] : {std::pair{&granted, store::JournalRecord::Kind::kGrant},
                                       {&released, store::JournalRecord::Kind::kRelease}}) {
      for (const auto& each : *leases) {
        std::promise<Result<void>> written;
        (*opened)->submit({kind, each},
                          [&written](Result<void> result) { written.set_value(result); });
        ASSERT_OK(written.get_future().get());
      }
    }
  }

  Result<RecoveredState> recover(
      std::size_t stickyCapacity = core::StickyMemory::kDefaultCapacity) {
    return recoverState(
        dir_.path(), pools(), [] { return uint64_t{7}; }, {}, stickyCapacity);
  }

  /// The host port a new sandbox (new container ID and UID) of pod ns/`pod` gets for "web".
  static uint16_t portOfNewSandbox(core::Allocator& allocator, const std::string& pod,
                                   bool sticky = true) {
    AllocationRequest request;
    request.key = {"new-" + pod, "eth0"};
    request.pod = {"ns", pod, "a-new-uid"};
    request.dynamics = {{"web", 80, 1, PortProtocol::kTcp}};
    request.sticky = sticky;
    NoHostSockets probe;
    const auto granted = allocator.allocate(request, probe);
    EXPECT_OK(granted);
    return granted ? granted->ports.at(0).hostPort : 0;
  }

  struct NoHostSockets final : core::PortProbe {
    bool isBound(Protocol, uint16_t) override { return false; }
    core::PortHolder holderOf(Protocol, uint16_t) override { return {}; }
  };

  TempDir dir_;
  LogCapture log_;
};

TEST_F(RecoveryTest, PutsEveryLeaseBackIntoTheAllocator) {
  ASSERT_NO_FATAL_FAILURE(writeGrants({lease("c1", 30000), lease("c2", 30003)}));
  ASSERT_OK_AND_ASSIGN(RecoveredState state, recover());
  EXPECT_EQ(state.allocator.leaseCount(), 2u);
  EXPECT_EQ(state.allocator.find({"c2", "eth0"}), lease("c2", 30003));
  EXPECT_EQ(state.allocator.usage().at(0).used, 2u);
  EXPECT_EQ(state.store->stats().recovery.recordsReplayed, 2u);
}

TEST_F(RecoveryTest, LogsWhatItFound) {
  ASSERT_NO_FATAL_FAILURE(writeGrants({lease("c1", 30000), lease("c2", 30003)}));
  ASSERT_OK(recover());
  const auto lines = log_.events("store.recovered");
  ASSERT_EQ(lines.size(), 1u) << log_.text();
  EXPECT_THAT(lines[0], StartsWith("store.recovered leases=2 ms="));
  EXPECT_THAT(lines[0], HasSubstr(" generation=0 snapshot_leases=0 records=2 torn_tail=false "
                                  "torn_bytes=0 stale_files=0 sticky_pods=2 dir=" +
                                  dir_.path()));
}

TEST_F(RecoveryTest, LogsATornTail) {
  ASSERT_NO_FATAL_FAILURE(writeGrants({lease("c1", 30000), lease("c2", 30003)}));
  const auto journal = dir_ / "journal.0";
  const std::string image = store::testing::readText(journal);
  store::testing::writeFile(journal, image.substr(0, image.size() - 3));
  ASSERT_OK_AND_ASSIGN(RecoveredState state, recover());
  EXPECT_EQ(state.allocator.leaseCount(), 1u);
  const auto lines = log_.events("store.recovered");
  ASSERT_EQ(lines.size(), 1u) << log_.text();
  EXPECT_THAT(lines[0], StartsWith("store.recovered leases=1 "));
  EXPECT_THAT(lines[0], HasSubstr(" records=1 torn_tail=true torn_bytes="));
}

TEST_F(RecoveryTest, RefusesALeaseThatDoesNotFitThePools) {
  ASSERT_NO_FATAL_FAILURE(writeGrants({lease("c1", 30000), lease("c2", 30001, "media")}));
  auto state = recover();
  ASSERT_FALSE(state);
  EXPECT_EQ(state.error().code, ErrorCode::kInvalidArgument);
  EXPECT_THAT(state.error().message, StartsWith("cannot restore a recovered lease: "));
  EXPECT_THAT(state.error().message, HasSubstr("c2/eth0"));
  EXPECT_TRUE(log_.events("store.recovered").empty());
}

TEST_F(RecoveryTest, RefusesOverlappingLeases) {
  ASSERT_NO_FATAL_FAILURE(writeGrants({lease("c1", 30000), lease("c2", 30000)}));
  auto state = recover();
  ASSERT_FALSE(state);
  EXPECT_EQ(state.error().code, ErrorCode::kConflict);
  EXPECT_THAT(state.error().message, StartsWith("cannot restore a recovered lease: "));
}

TEST_F(RecoveryTest, LogsStoreFailedNamingTheFileWhenTheStoreRefusesItsState) {
  ASSERT_NO_FATAL_FAILURE(writeGrants({lease("c1", 30000)}));
  const auto journal = dir_ / "journal.0";
  store::testing::writeFile(journal, "");
  auto state = recover();
  ASSERT_FALSE(state);
  EXPECT_EQ(state.error().code, ErrorCode::kIo);
  EXPECT_THAT(state.error().message, StartsWith("cannot recover leases: "));
  const auto lines = log_.events("store.failed");
  ASSERT_EQ(lines.size(), 1u) << log_.text();
  EXPECT_THAT(lines[0], StartsWith("store.failed cause=\"lease store " + dir_.path() +
                                   ": journal " + journal.string() + ": is 0 bytes long"));
  EXPECT_THAT(lines[0], HasSubstr(" exit_in_ms=0"));
  EXPECT_TRUE(log_.events("store.recovered").empty());
}

TEST_F(RecoveryTest, RefusesAStateDirAnotherAgentHolds) {
  auto holder = LeaseStore::open(dir_.path());
  ASSERT_OK(holder);
  auto state = recover();
  ASSERT_FALSE(state);
  EXPECT_EQ(state.error().code, ErrorCode::kUnavailable);
  EXPECT_THAT(state.error().message, StartsWith("cannot open the state dir: "));
}

// --- sticky ports across restarts ---

TEST_F(RecoveryTest, OffersAReleasedPodItsPortsAfterARestart) {
  // Released before the restart: only the journal remembers it.
  ASSERT_NO_FATAL_FAILURE(writeRecords({lease("c1", 30005)}, {lease("c1", 30005)}));
  ASSERT_OK_AND_ASSIGN(RecoveredState state, recover());
  EXPECT_EQ(state.allocator.leaseCount(), 0u);
  EXPECT_EQ(portOfNewSandbox(state.allocator, "pod-c1"), 30005);  // lowest free is 30000
}

TEST_F(RecoveryTest, KeepsNoPortsForAPodThatOptedOut) {
  Lease optedOut = lease("c1", 30005);
  optedOut.sticky = false;
  Lease earlier = lease("c0", 30007);
  earlier.pod = optedOut.pod;  // what it had before it opted out is forgotten too
  ASSERT_NO_FATAL_FAILURE(writeRecords({earlier, optedOut}, {earlier, optedOut}));
  ASSERT_OK_AND_ASSIGN(RecoveredState state, recover());
  EXPECT_EQ(state.allocator.stickyPods(), 0u);
  EXPECT_EQ(portOfNewSandbox(state.allocator, "pod-c1"), 30000);
}

TEST_F(RecoveryTest, KeepsTheStickyMemoryBoundedAcrossReplayAndCompaction) {
  std::vector<Lease> leases;
  for (int i = 0; i < 8; ++i) leases.push_back(lease("c" + std::to_string(i), 30000 + i));
  ASSERT_NO_FATAL_FAILURE(writeRecords(leases, leases));
  {
    ASSERT_OK_AND_ASSIGN(RecoveredState state, recover(3));
    EXPECT_EQ(state.allocator.stickyPods(), 3u);  // the newest three of eight
    std::promise<Result<void>> compacted;
    state.store->submitCompaction(
        state.allocator.leases(), [&](Result<void> result) { compacted.set_value(result); },
        state.allocator.stickyEntries());
    ASSERT_OK(compacted.get_future().get());
  }
  ASSERT_OK_AND_ASSIGN(RecoveredState state, recover(3));
  EXPECT_EQ(state.store->stats().recovery.recordsReplayed, 0u);  // all from the snapshot
  EXPECT_EQ(state.allocator.stickyPods(), 3u);
  EXPECT_EQ(portOfNewSandbox(state.allocator, "pod-c7"), 30007);
  EXPECT_EQ(portOfNewSandbox(state.allocator, "pod-c5"), 30005);
  EXPECT_EQ(portOfNewSandbox(state.allocator, "pod-c1"), 30000);  // forgotten: lowest free
}

TEST_F(RecoveryTest, RefusesInvalidPools) {
  auto state = recoverState(dir_.path(),
                            {{"default", {{30000, 30009}}, {}, core::Strategy::kLowest},
                             {"other", {{30005, 30006}}, {}, core::Strategy::kLowest}},
                            [] { return uint64_t{7}; });
  ASSERT_FALSE(state);
  EXPECT_EQ(state.error().code, ErrorCode::kInvalidArgument);
  EXPECT_THAT(state.error().message, StartsWith("invalid pools: "));
}

}  // namespace
}  // namespace hostport::agent::daemon
