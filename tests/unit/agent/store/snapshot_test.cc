#include "agent/store/snapshot.h"

#include <gtest/gtest.h>

#include <cstring>
#include <random>

#include "agent/store/crc32c.h"
#include "store_test_util.h"
#include "tests/fakes/faulty_file_ops.h"
#include "tests/support/result_assertions.h"
#include "tests/support/temp_dir.h"

namespace hostport::agent::store {
namespace {

using test::TempDir;
using testing::readText;
using testing::sampleLease;
using testing::writeFile;

std::vector<Lease> sampleLeases(int count) {
  std::vector<Lease> leases;
  for (int i = 0; i < count; ++i) leases.push_back(sampleLease(i));
  return leases;
}

TEST(SnapshotTest, RoundTripsGenerationAndLeases) {
  for (int count : {0, 1, 50}) {
    auto image = encodeSnapshot(42, sampleLeases(count));
    ASSERT_TRUE(image.has_value());
    EXPECT_EQ(image->substr(0, 4), "HPSN");
    auto snapshot = decodeSnapshot(*image);
    ASSERT_OK(snapshot);
    EXPECT_EQ(snapshot->generation, 42u);
    EXPECT_EQ(snapshot->leases, sampleLeases(count));
  }
}

TEST(SnapshotTest, RoundTripsTheStickyMemoryOldestFirst) {
  const std::vector<StickyEntry> sticky = {
      {"db",
       "pg-0",
       "default",
       {{"sql", PortProtocol::kTcp, 30001, 0, 1, std::nullopt, false}},
       false},
      {"db",
       "pg-1",
       "media",
       {{"rtp", PortProtocol::kUdp, 31000, 0, 4, std::nullopt, false}},
       false}};
  auto image = encodeSnapshot(7, sampleLeases(3), sticky);
  ASSERT_OK(image);
  auto snapshot = decodeSnapshot(*image);
  ASSERT_OK(snapshot);
  EXPECT_EQ(snapshot->leases, sampleLeases(3));
  EXPECT_EQ(snapshot->sticky, sticky);
}

/// `image` with its format version set to `version`, its CRC made right again.
std::string withFormatVersion(std::string image, uint32_t version) {
  image.resize(image.size() - 4);
  std::memcpy(image.data() + 4, &version, 4);
  const uint32_t crc = crc32c(image);
  image.append(reinterpret_cast<const char*>(&crc), 4);
  return image;
}

// Formats 1 and 2 were never released (docs/design.md, "Version skew"): refused, naming the
// version, like any other the agent does not read.
TEST(SnapshotTest, RefusesAFormatItDoesNotRead) {
  const std::string image = *encodeSnapshot(9, sampleLeases(5));
  ASSERT_OK(decodeSnapshot(image));
  for (const uint32_t version : {1u, 2u, 4u}) {
    const auto snapshot = decodeSnapshot(withFormatVersion(image, version));
    ASSERT_FALSE(snapshot.has_value()) << version;
    EXPECT_NE(
        snapshot.error().message.find("unsupported format version " + std::to_string(version)),
        std::string::npos)
        << snapshot.error().message;
  }
}

TEST(SnapshotTest, RejectsEveryTruncationAndEverySingleByteFlip) {
  const std::string image = encodeSnapshot(3, sampleLeases(4)).value();
  for (size_t length = 0; length < image.size(); ++length) {
    EXPECT_FALSE(decodeSnapshot(image.substr(0, length)).has_value()) << length;
  }
  for (size_t at = 0; at < image.size(); ++at) {
    std::string bad = image;
    bad[at] ^= 0x20;
    auto snapshot = decodeSnapshot(bad);
    ASSERT_FALSE(snapshot.has_value()) << at;
    EXPECT_EQ(snapshot.error().code, ErrorCode::kDecode);
  }
}

TEST(SnapshotTest, SurvivesRandomGarbageWithAValidFrame) {
  // Garbage wrapped in a correct header and CRC reaches the lease decoder and count checks.
  std::mt19937 random(99);
  for (int iteration = 0; iteration < 3000; ++iteration) {
    std::vector<Lease> none;
    std::string image = encodeSnapshot(1, none).value();
    image.resize(image.size() - 4);  // drop the CRC
    std::string body(random() % 200, '\0');
    for (char& c : body) c = static_cast<char>(random());
    image += body;
    const uint32_t count = random() % 5;
    std::memcpy(image.data() + 16, &count, 4);
    const uint64_t length = body.size();
    std::memcpy(image.data() + 20, &length, 8);
    const uint32_t crc = crc32c(image);
    image.append(reinterpret_cast<const char*>(&crc), 4);
    auto snapshot = decodeSnapshot(image);
    if (snapshot) {
      EXPECT_EQ(snapshot->leases.size(), count);
    }
  }
}

TEST(SnapshotTest, ParsesOnlyCanonicalJournalNames) {
  EXPECT_EQ(parseJournalName("journal.0"), 0u);
  EXPECT_EQ(parseJournalName("journal.18446744073709551615"), UINT64_MAX);
  for (const char* name : {"journal.", "journal.01", "journal.-1", "journal.+1", "journal.1x",
                           "journal.18446744073709551616", "journal", "snapshot", "xjournal.1"}) {
    EXPECT_FALSE(parseJournalName(name).has_value()) << name;
  }
  EXPECT_EQ(journalPath("/d", 12), std::filesystem::path("/d/journal.12"));
}

TEST(SnapshotTest, ReadSnapshotReportsMissingAsNotFoundAndCorruptionAsIo) {
  TempDir dir;
  auto missing = readSnapshot(*realFileOps(), dir.path());
  ASSERT_FALSE(missing.has_value());
  EXPECT_EQ(missing.error().code, ErrorCode::kNotFound);

  std::string image = encodeSnapshot(2, sampleLeases(3)).value();
  image[40] ^= 1;
  writeFile(dir / "snapshot", image);
  auto corrupt = readSnapshot(*realFileOps(), dir.path());
  ASSERT_FALSE(corrupt.has_value());
  EXPECT_EQ(corrupt.error().code, ErrorCode::kIo);
  EXPECT_NE(corrupt.error().message.find((dir / "snapshot").string()), std::string::npos);
}

class CompactionTest : public ::testing::Test {
 protected:
  void SetUp() override {
    auto journal = JournalFile::create(realFileOps(), journalPath(dir_.path(), 4), 4);
    ASSERT_TRUE(journal.has_value());
    std::string frame;
    appendFrame(frame, "old record");
    ASSERT_TRUE(journal->append(frame).has_value());
    writeFile(dir_ / "snapshot", encodeSnapshot(4, sampleLeases(1)).value());
    oldJournal_ = readText(journalPath(dir_.path(), 4));
  }

  void expectOldGenerationUntouched() {
    EXPECT_EQ(readSnapshot(*realFileOps(), dir_.path()).value().generation, 4u);
    EXPECT_EQ(readText(journalPath(dir_.path(), 4)), oldJournal_);
    EXPECT_FALSE(std::filesystem::exists(dir_ / "snapshot.tmp"));
    EXPECT_FALSE(std::filesystem::exists(journalPath(dir_.path(), 5)));
  }

  TempDir dir_;
  std::string oldJournal_;
};

TEST_F(CompactionTest, SwitchesToTheNextGenerationAndRemovesTheOldJournal) {
  auto fs = std::make_shared<FaultyFileOps>();
  auto journal = compact(fs, dir_.path(), 5, sampleLeases(10));
  ASSERT_TRUE(journal.has_value()) << journal.error().error.message;
  EXPECT_EQ(journal->generation(), 5u);
  EXPECT_EQ(journal->recordBytes(), 0u);
  auto snapshot = readSnapshot(*realFileOps(), dir_.path());
  ASSERT_TRUE(snapshot.has_value());
  EXPECT_EQ(snapshot->generation, 5u);
  EXPECT_EQ(snapshot->leases, sampleLeases(10));
  EXPECT_EQ(readText(journalPath(dir_.path(), 5)), journalHeader(5));
  EXPECT_FALSE(std::filesystem::exists(journalPath(dir_.path(), 4)));
  EXPECT_FALSE(std::filesystem::exists(dir_ / "snapshot.tmp"));
  // The durable-switch order: data synced, new journal synced, directory synced, then rename,
  // then the directory again, and only then the old journal goes.
  EXPECT_EQ(fs->steps(), (std::vector<std::string>{
                             "open snapshot.tmp", "pwrite snapshot.tmp", "fsync snapshot.tmp",
                             "open journal.5", "pwrite journal.5", "fsync journal.5", "syncDir",
                             "rename snapshot.tmp", "syncDir", "unlink journal.4"}));
}

TEST_F(CompactionTest, KeepsTheOldGenerationWhenAStepBeforeTheRenameFails) {
  const FaultyFileOps::Op ops[] = {FaultyFileOps::Op::kOpen, FaultyFileOps::Op::kPwrite,
                                   FaultyFileOps::Op::kFsync, FaultyFileOps::Op::kSyncDir};
  for (FaultyFileOps::Op op : ops) {
    for (int skip = 0; skip < 2; ++skip) {
      auto fs = std::make_shared<FaultyFileOps>();
      fs->failOnce(op, op == FaultyFileOps::Op::kPwrite ? ENOSPC : EIO, skip);
      if (op == FaultyFileOps::Op::kSyncDir && skip == 1) continue;  // that one is after rename
      auto journal = compact(fs, dir_.path(), 5, sampleLeases(3));
      ASSERT_FALSE(journal.has_value());
      EXPECT_FALSE(journal.error().switchUncertain);
      EXPECT_EQ(journal.error().error.code, ErrorCode::kIo);
      EXPECT_NE(journal.error().error.message.find("compaction to generation 5"),
                std::string::npos);
      expectOldGenerationUntouched();
    }
  }
}

TEST_F(CompactionTest, ReportsAFailedRenameOrDirectorySyncAfterItAsUncertain) {
  for (int which = 0; which < 2; ++which) {
    auto fs = std::make_shared<FaultyFileOps>();
    if (which == 0) {
      fs->failOnce(FaultyFileOps::Op::kRename, EIO);
    } else {
      fs->failOnce(FaultyFileOps::Op::kSyncDir, EIO, 1);
    }
    auto journal = compact(fs, dir_.path(), 5, sampleLeases(3));
    ASSERT_FALSE(journal.has_value());
    EXPECT_TRUE(journal.error().switchUncertain) << which;
    // Neither journal is deleted: which one is live is for the next startup to decide.
    EXPECT_TRUE(std::filesystem::exists(journalPath(dir_.path(), 4)));
    EXPECT_TRUE(std::filesystem::exists(journalPath(dir_.path(), 5)));
  }
}

}  // namespace
}  // namespace hostport::agent::store
