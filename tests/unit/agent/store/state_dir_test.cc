#include "agent/store/state_dir.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <string>
#include <vector>

#include "agent/store/journal_file.h"
#include "agent/store/lease_codec.h"
#include "agent/store/snapshot.h"
#include "store_test_util.h"
#include "tests/support/temp_dir.h"

namespace hostport::agent::store {
namespace {

using test::TempDir;
using testing::sampleLease;
using testing::writeFile;
using Paths = std::vector<std::filesystem::path>;

const std::filesystem::path kDir = "/state";

class StateDirTest : public ::testing::Test {};

TEST_F(StateDirTest, FindsTheLiveJournalOfTheSnapshotGeneration) {
  const StateDirPlan plan = classifyStateDir(kDir, {"lock", "snapshot", "journal.2"}, uint64_t{2});
  EXPECT_EQ(plan.liveJournal, kDir / "journal.2");
  EXPECT_TRUE(plan.liveJournalExists);
  EXPECT_FALSE(plan.nextJournal.has_value());
  EXPECT_TRUE(plan.stale.empty());
  EXPECT_FALSE(plan.refusal.has_value());
}

TEST_F(StateDirTest, MarksOlderJournalsAndTheSnapshotTmpAsStaleInTheOrderListed) {
  const StateDirPlan plan = classifyStateDir(
      kDir, {"journal.0", "snapshot.tmp", "journal.5", "snapshot", "journal.4"}, uint64_t{5});
  EXPECT_TRUE(plan.liveJournalExists);
  EXPECT_EQ(plan.stale, (Paths{kDir / "journal.0", kDir / "snapshot.tmp", kDir / "journal.4"}));
  EXPECT_FALSE(plan.refusal.has_value());
}

TEST_F(StateDirTest, LeavesFilesThatAreNotTheStoresAlone) {
  const StateDirPlan plan = classifyStateDir(
      kDir, {"journal.2", "journal.backup", "journal.01", "journal.", "journal.+1", "notes.txt"},
      uint64_t{2});
  EXPECT_TRUE(plan.liveJournalExists);
  EXPECT_TRUE(plan.stale.empty());
  EXPECT_FALSE(plan.refusal.has_value());
}

TEST_F(StateDirTest, MarksTheNextGenerationsJournalStaleButToBeCheckedFirst) {
  const StateDirPlan plan =
      classifyStateDir(kDir, {"journal.3", "snapshot", "journal.2"}, uint64_t{2});
  EXPECT_TRUE(plan.liveJournalExists);
  EXPECT_EQ(plan.nextJournal, kDir / "journal.3");
  EXPECT_EQ(plan.stale, (Paths{kDir / "journal.3"}));
  EXPECT_FALSE(plan.refusal.has_value());
}

TEST_F(StateDirTest, RefusesAJournalNewerThanTheNextGeneration) {
  const StateDirPlan plan =
      classifyStateDir(kDir, {"snapshot", "journal.2", "journal.4"}, uint64_t{2});
  ASSERT_TRUE(plan.refusal.has_value());
  EXPECT_EQ(plan.refusal->code, ErrorCode::kIo);
  EXPECT_EQ(plan.refusal->message,
            "/state/journal.4 is newer than the snapshot generation 2; the snapshot may have been "
            "lost or replaced, refusing to start");
}

TEST_F(StateDirTest, RefusesAJournalTwoGenerationsAheadOfNoSnapshot) {
  const StateDirPlan plan = classifyStateDir(kDir, {"journal.0", "journal.2"}, std::nullopt);
  ASSERT_TRUE(plan.refusal.has_value());
  EXPECT_EQ(plan.refusal->message,
            "/state/journal.2 is newer than the snapshot generation 0; the snapshot may have been "
            "lost or replaced, refusing to start");
}

TEST_F(StateDirTest, KeepsTheNextJournalForCheckingOnlyWhenListedBeforeANewerOne) {
  // Of two faults the one listed first is reported: the caller checks nextJournal, then refuses.
  const StateDirPlan nextFirst =
      classifyStateDir(kDir, {"journal.2", "journal.3", "journal.5"}, uint64_t{2});
  EXPECT_EQ(nextFirst.nextJournal, kDir / "journal.3");
  ASSERT_TRUE(nextFirst.refusal.has_value());
  EXPECT_NE(nextFirst.refusal->message.find("/state/journal.5 is newer"), std::string::npos);

  const StateDirPlan newerFirst =
      classifyStateDir(kDir, {"journal.2", "journal.5", "journal.3"}, uint64_t{2});
  EXPECT_FALSE(newerFirst.nextJournal.has_value());
  ASSERT_TRUE(newerFirst.refusal.has_value());
  EXPECT_NE(newerFirst.refusal->message.find("/state/journal.5 is newer"), std::string::npos);
}

TEST_F(StateDirTest, RefusesASnapshotWhoseLiveJournalIsMissing) {
  const StateDirPlan plan =
      classifyStateDir(kDir, {"lock", "snapshot", "journal.1", "journal.3"}, uint64_t{2});
  EXPECT_FALSE(plan.liveJournalExists);
  EXPECT_EQ(plan.nextJournal, kDir / "journal.3");  // checked before the refusal
  ASSERT_TRUE(plan.refusal.has_value());
  EXPECT_EQ(plan.refusal->code, ErrorCode::kIo);
  EXPECT_EQ(plan.refusal->message,
            "the snapshot is at generation 2 but /state/journal.2 is missing; acknowledged leases "
            "may be lost, refusing to start");
}

TEST_F(StateDirTest, CreatesTheFirstJournalWhenThereIsNoSnapshotAndNoJournal) {
  const StateDirPlan plan = classifyStateDir(kDir, {"lock", "snapshot.tmp"}, std::nullopt);
  EXPECT_EQ(plan.liveJournal, kDir / "journal.0");
  EXPECT_FALSE(plan.liveJournalExists);
  EXPECT_EQ(plan.stale, (Paths{kDir / "snapshot.tmp"}));
  EXPECT_FALSE(plan.refusal.has_value());
}

// Only a compaction from generation 0 makes journal.1, and it removes journal.0 only once its
// snapshot is in place: journal.1 alone means the snapshot went, and with it the leases.
TEST_F(StateDirTest, RefusesANextJournalWithNeitherTheSnapshotNorTheJournalBeforeIt) {
  const StateDirPlan plan = classifyStateDir(kDir, {"lock", "journal.1"}, std::nullopt);
  EXPECT_FALSE(plan.liveJournalExists);
  EXPECT_EQ(plan.nextJournal, kDir / "journal.1");  // checked before the refusal
  ASSERT_TRUE(plan.refusal.has_value());
  EXPECT_EQ(plan.refusal->code, ErrorCode::kIo);
  EXPECT_EQ(plan.refusal->message,
            "/state/journal.1 is there but neither the snapshot nor /state/journal.0 is; "
            "acknowledged leases may be lost, refusing to start");
}

TEST_F(StateDirTest, AcceptsANextJournalBesideJournalZeroWithoutASnapshot) {
  const StateDirPlan plan = classifyStateDir(kDir, {"journal.1", "journal.0"}, std::nullopt);
  EXPECT_TRUE(plan.liveJournalExists);
  EXPECT_EQ(plan.nextJournal, kDir / "journal.1");
  EXPECT_EQ(plan.stale, (Paths{kDir / "journal.1"}));
  EXPECT_FALSE(plan.refusal.has_value());
}

TEST_F(StateDirTest, ASnapshotAtGenerationZeroStillNeedsItsJournal) {
  const StateDirPlan plan = classifyStateDir(kDir, {"snapshot"}, uint64_t{0});
  ASSERT_TRUE(plan.refusal.has_value());
  EXPECT_NE(plan.refusal->message.find("/state/journal.0 is missing"), std::string::npos);
}

class StateDirFilesTest : public StateDirTest {
 protected:
  std::filesystem::path next() const { return journalPath(dir_.path(), 3); }
  TempDir dir_;
};

TEST_F(StateDirFilesTest, AcceptsANextJournalHoldingOnlyItsHeader) {
  writeFile(next(), journalHeader(3));
  EXPECT_TRUE(checkNextJournalIsEmpty(*realFileOps(), next(), 2).has_value());
}

TEST_F(StateDirFilesTest, AcceptsANextJournalWhoseHeaderIsTorn) {
  writeFile(next(), journalHeader(3).substr(0, 5));
  EXPECT_TRUE(checkNextJournalIsEmpty(*realFileOps(), next(), 2).has_value());
}

TEST_F(StateDirFilesTest, RefusesANextJournalHoldingRecords) {
  std::string image = journalHeader(3);
  std::string payload;
  ASSERT_TRUE(encodeRecord({JournalRecord::Kind::kGrant, sampleLease(1)}, payload).has_value());
  appendFrame(image, payload);
  writeFile(next(), image);
  const auto checked = checkNextJournalIsEmpty(*realFileOps(), next(), 2);
  ASSERT_FALSE(checked.has_value());
  EXPECT_EQ(checked.error().code, ErrorCode::kIo);
  EXPECT_EQ(checked.error().message,
            next().string() +
                " holds records but the snapshot is at generation 2; the snapshot may have been "
                "lost or replaced, refusing to start");
}

TEST_F(StateDirFilesTest, PassesOnTheErrorOfANextJournalThatCannotBeOpened) {
  const auto checked = checkNextJournalIsEmpty(*realFileOps(), next(), 2);
  ASSERT_FALSE(checked.has_value());
  EXPECT_EQ(checked.error().code, ErrorCode::kNotFound);
  EXPECT_NE(checked.error().message.find(next().string()), std::string::npos);
}

}  // namespace
}  // namespace hostport::agent::store
