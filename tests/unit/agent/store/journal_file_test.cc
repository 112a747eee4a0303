#include "agent/store/journal_file.h"

#include <gtest/gtest.h>

#include <vector>

#include "agent/store/crc32c.h"
#include "agent/store/lease_codec.h"
#include "store_test_util.h"
#include "tests/fakes/faulty_file_ops.h"
#include "tests/support/result_assertions.h"
#include "tests/support/temp_dir.h"

namespace hostport::agent::store {
namespace {

using test::TempDir;
using testing::readText;
using testing::writeFile;

struct Replayed {
  std::vector<std::string> payloads;
  std::vector<uint64_t> offsets;
  RecordSink sink() {
    return [this](std::string_view payload, uint64_t offset) -> Result<void> {
      payloads.emplace_back(payload);
      offsets.push_back(offset);
      return {};
    };
  }
};

class JournalFileTest : public ::testing::Test {
 protected:
  std::filesystem::path path() const { return dir_ / "journal.7"; }

  /// A journal.7 image with `count` records "record-<i>" of growing size; returns frame offsets.
  std::vector<uint64_t> writeJournal(int count, std::string* image = nullptr) {
    std::string bytes = journalHeader(7);
    std::vector<uint64_t> offsets;
    for (int i = 0; i < count; ++i) {
      offsets.push_back(bytes.size());
      appendFrame(bytes, "record-" + std::to_string(i) + std::string(i * 10, 'x'));
    }
    offsets.push_back(bytes.size());  // the end
    writeFile(path(), bytes);
    if (image != nullptr) *image = bytes;
    return offsets;
  }

  /// Opens journal.7 as a live one (a snapshot names it) unless `torn` says otherwise.
  Result<JournalFile::Opened> open(Replayed& replayed,
                                   TornCreation torn = TornCreation::kImpossible) {
    return JournalFile::open(realFileOps(), path(), 7, torn, replayed.sink());
  }

  TempDir dir_;
};

TEST(Crc32cTest, MatchesTheStandardCheckValues) {
  EXPECT_EQ(crc32c("123456789"), 0xE3069283u);
  EXPECT_EQ(crc32c(""), 0u);
  EXPECT_EQ(crc32c(std::string(32, '\0')), 0x8A9136AAu);  // RFC 3720 B.4
  EXPECT_EQ(crc32cPortable("123456789"), 0xE3069283u);
  std::string random(1000, '\0');
  for (size_t i = 0; i < random.size(); ++i) random[i] = static_cast<char>(i * 131 + 7);
  for (size_t length = 0; length <= random.size(); length += 37) {
    EXPECT_EQ(crc32c(random.substr(0, length)), crc32cPortable(random.substr(0, length)));
  }
  const std::string text = "The quick brown fox jumps over the lazy dog, twice over";
  for (size_t split = 0; split <= text.size(); ++split) {
    EXPECT_EQ(crc32c(text.substr(split), crc32c(text.substr(0, split))), crc32c(text)) << split;
  }
}

TEST_F(JournalFileTest, CreatesAnEmptyJournalWithAHeader) {
  auto journal = JournalFile::create(realFileOps(), path(), 7);
  ASSERT_OK(journal);
  EXPECT_EQ(journal->size(), kJournalHeaderBytes);
  EXPECT_EQ(journal->recordBytes(), 0u);
  EXPECT_EQ(readText(path()), journalHeader(7));
  EXPECT_EQ(journalHeader(7).substr(0, 8), std::string("HPJL\x01\x00\x00\x00", 8));
}

TEST_F(JournalFileTest, ReplaysAppendedRecordsInOrderAfterReopen) {
  {
    auto journal = JournalFile::create(realFileOps(), path(), 7);
    ASSERT_TRUE(journal.has_value());
    std::string frames;
    for (int i = 0; i < 3; ++i) appendFrame(frames, "r" + std::to_string(i));
    ASSERT_TRUE(journal->append(frames).has_value());
    std::string more;
    appendFrame(more, "r3");
    ASSERT_TRUE(journal->append(more).has_value());
    ASSERT_TRUE(journal->sync().has_value());
    EXPECT_EQ(journal->recordBytes(), 4 * (kFrameHeaderBytes + 2));
  }
  Replayed replayed;
  auto opened = open(replayed);
  ASSERT_OK(opened);
  EXPECT_EQ(replayed.payloads, (std::vector<std::string>{"r0", "r1", "r2", "r3"}));
  EXPECT_EQ(replayed.offsets.front(), kJournalHeaderBytes);
  EXPECT_EQ(opened->scan.records, 4u);
  EXPECT_FALSE(opened->scan.tornTail);
  EXPECT_EQ(opened->file.size(), kJournalHeaderBytes + 4 * (kFrameHeaderBytes + 2));
}

TEST_F(JournalFileTest, SealFrameMatchesAppendFrame) {
  std::string sealed(kFrameHeaderBytes, '\0');
  sealed += "payload";
  sealFrame(sealed);
  std::string appended;
  appendFrame(appended, "payload");
  EXPECT_EQ(sealed, appended);
}

TEST_F(JournalFileTest, DropsATornLastRecordAtEveryTruncationLength) {
  std::string image;
  const auto offsets = writeJournal(3, &image);
  const uint64_t lastStart = offsets[2];
  for (uint64_t length = lastStart; length < offsets[3]; ++length) {
    writeFile(path(), image.substr(0, length));
    Replayed replayed;
    auto opened = open(replayed);
    ASSERT_OK(opened) << "file cut to " << length << " bytes";
    EXPECT_EQ(replayed.payloads.size(), 2u) << length;
    EXPECT_EQ(opened->scan.tornTail, length > lastStart) << length;
    EXPECT_EQ(opened->scan.tornBytes, length - lastStart) << length;
    EXPECT_EQ(opened->scan.validEnd, lastStart);
    // The torn bytes are gone from disk, so the next append starts on a clean boundary.
    EXPECT_EQ(std::filesystem::file_size(path()), lastStart) << length;
    std::string frame;
    appendFrame(frame, "after");
    ASSERT_TRUE(opened->file.append(frame).has_value());
    Replayed again;
    auto reopened = open(again);
    ASSERT_TRUE(reopened.has_value()) << length;
    EXPECT_EQ(again.payloads.back(), "after") << length;
    EXPECT_EQ(again.payloads.size(), 3u) << length;
    EXPECT_FALSE(reopened->scan.tornTail);
  }
}

TEST_F(JournalFileTest, DropsALastRecordWithABadCrc) {
  std::string image;
  const auto offsets = writeJournal(3, &image);
  image[offsets[3] - 1] ^= 0x01;  // last payload byte
  writeFile(path(), image);
  Replayed replayed;
  auto opened = open(replayed);
  ASSERT_OK(opened);
  EXPECT_EQ(replayed.payloads.size(), 2u);
  EXPECT_TRUE(opened->scan.tornTail);
  EXPECT_EQ(std::filesystem::file_size(path()), offsets[2]);
}

TEST_F(JournalFileTest, DropsAZeroFilledTail) {
  std::string image;
  const auto offsets = writeJournal(2, &image);
  writeFile(path(), image + std::string(4096, '\0'));
  Replayed replayed;
  auto opened = open(replayed);
  ASSERT_OK(opened);
  EXPECT_EQ(replayed.payloads.size(), 2u);
  EXPECT_EQ(opened->scan.tornBytes, 4096u);
  EXPECT_EQ(std::filesystem::file_size(path()), offsets[2]);
}

TEST_F(JournalFileTest, ReportsCorruptionBeforeTheTailLoudlyWithFileAndOffset) {
  std::string image;
  const auto offsets = writeJournal(4, &image);
  struct Damage {
    const char* what;
    size_t at;
    char value;
  };
  const Damage damages[] = {{"payload byte", offsets[1] + kFrameHeaderBytes + 2, 'Z'},
                            {"crc byte", offsets[1] + 5, '\x7f'},
                            {"length grown", offsets[1] + 2, '\x01'},
                            {"length zeroed", offsets[1], '\0'}};
  for (const Damage& damage : damages) {
    std::string bad = image;
    bad[damage.at] = damage.value;
    if (std::string_view(damage.what) == "length zeroed") bad.replace(offsets[1], 4, 4, '\0');
    writeFile(path(), bad);
    Replayed replayed;
    auto opened = open(replayed);
    ASSERT_FALSE(opened.has_value()) << damage.what;
    EXPECT_EQ(opened.error().code, ErrorCode::kIo) << damage.what;
    EXPECT_NE(opened.error().message.find(path().string()), std::string::npos);
    EXPECT_NE(opened.error().message.find("byte offset " + std::to_string(offsets[1])),
              std::string::npos)
        << damage.what << ": " << opened.error().message;
    // Nothing is cut away: the file stays as it was for an operator to inspect.
    EXPECT_EQ(readText(path()), bad) << damage.what;
  }
}

TEST_F(JournalFileTest, ReportsAnUnreadableRecordWithItsOffset) {
  const auto offsets = writeJournal(3);
  Replayed replayed;
  int seen = 0;
  RecordSink sink = [&](std::string_view, uint64_t) -> Result<void> {
    if (++seen == 2) return fail(ErrorCode::kDecode, "journal record: unknown kind 9");
    return {};
  };
  auto opened = JournalFile::open(realFileOps(), path(), 7, TornCreation::kImpossible, sink);
  ASSERT_FALSE(opened.has_value());
  EXPECT_EQ(opened.error().code, ErrorCode::kIo);
  EXPECT_NE(opened.error().message.find("byte offset " + std::to_string(offsets[1])),
            std::string::npos);
  EXPECT_NE(opened.error().message.find("unknown kind 9"), std::string::npos);
}

TEST_F(JournalFileTest, RejectsAWrongMagicVersionOrGeneration) {
  std::string image;
  writeJournal(1, &image);
  std::string badMagic = image;
  badMagic[0] = 'X';
  std::string badVersion = image;
  badVersion[4] = 2;
  std::string badGeneration = image;
  badGeneration[8] = 8;
  for (const std::string& bad : {badMagic, badVersion, badGeneration}) {
    writeFile(path(), bad);
    Replayed replayed;
    auto opened = open(replayed);
    ASSERT_FALSE(opened.has_value());
    EXPECT_EQ(opened.error().code, ErrorCode::kIo);
    EXPECT_NE(opened.error().message.find(path().string()), std::string::npos);
  }
}

TEST_F(JournalFileTest, StartsOverAJournalWhoseHeaderWasTornBeforeItBecameLive) {
  for (const size_t length : {size_t{0}, size_t{5}, kJournalHeaderBytes - 1}) {
    SCOPED_TRACE(length);
    writeFile(path(), journalHeader(7).substr(0, length));
    Replayed replayed;
    auto opened = open(replayed, TornCreation::kPossible);
    ASSERT_OK(opened);
    EXPECT_TRUE(replayed.payloads.empty());
    EXPECT_EQ(opened->scan.tornTail, length > 0);
    EXPECT_EQ(opened->scan.tornBytes, length);
    EXPECT_EQ(readText(path()), journalHeader(7));
  }
}

// A live journal's header was fsynced before a snapshot named it, so no crash leaves it short:
// emptied or cut, its acknowledged records are gone, and starting it over would hide that.
TEST_F(JournalFileTest, RefusesALiveJournalShorterThanItsHeaderAndLeavesItAsItIs) {
  for (const size_t length : {size_t{0}, size_t{1}, size_t{8}, kJournalHeaderBytes - 1}) {
    SCOPED_TRACE(length);
    const std::string cut = journalHeader(7).substr(0, length);
    writeFile(path(), cut);
    Replayed replayed;
    auto opened = open(replayed, TornCreation::kImpossible);
    ASSERT_FALSE(opened.has_value());
    EXPECT_EQ(opened.error().code, ErrorCode::kIo);
    EXPECT_EQ(opened.error().message,
              "journal " + path().string() + ": is " + std::to_string(length) +
                  " bytes long, shorter than its 16-byte header, which was on disk before the "
                  "journal became live: it was emptied or cut since, and acknowledged leases may "
                  "be lost; refusing to start (inspect or restore the file)");
    EXPECT_EQ(readText(path()), cut);
  }
}

TEST_F(JournalFileTest, ScanFramesIsPureAndReportsRecordCounts) {
  std::string image = journalHeader(1);
  appendFrame(image, "a");
  appendFrame(image, "bb");
  Replayed replayed;
  auto scan = scanFrames(image, kJournalHeaderBytes, "mem", replayed.sink());
  ASSERT_TRUE(scan.has_value());
  EXPECT_EQ(scan->records, 2u);
  EXPECT_EQ(scan->validEnd, image.size());
  EXPECT_EQ(replayed.offsets, (std::vector<uint64_t>{16, 25}));
}

TEST_F(JournalFileTest, AppendReportsEnospcWithTheFileAndOffset) {
  auto fs = std::make_shared<FaultyFileOps>();
  auto journal = JournalFile::create(fs, path(), 7);
  ASSERT_TRUE(journal.has_value());
  fs->failOnce(FaultyFileOps::Op::kPwrite, ENOSPC);
  std::string frame;
  appendFrame(frame, "x");
  auto appended = journal->append(frame);
  ASSERT_FALSE(appended.has_value());
  EXPECT_EQ(appended.error().code, ErrorCode::kIo);
  EXPECT_NE(appended.error().message.find("No space left on device"), std::string::npos);
  EXPECT_NE(appended.error().message.find("journal.7 at byte offset 16"), std::string::npos);
}

TEST_F(JournalFileTest, AppendCompletesThroughShortWrites) {
  auto fs = std::make_shared<FaultyFileOps>();
  fs->setMaxWrite(3);
  auto journal = JournalFile::create(fs, path(), 7);
  ASSERT_TRUE(journal.has_value());
  std::string frames;
  for (int i = 0; i < 5; ++i) appendFrame(frames, "short-write-" + std::to_string(i));
  ASSERT_TRUE(journal->append(frames).has_value());
  EXPECT_GT(fs->calls(FaultyFileOps::Op::kPwrite), 20);
  Replayed replayed;
  ASSERT_TRUE(open(replayed).has_value());
  EXPECT_EQ(replayed.payloads.size(), 5u);
}

}  // namespace
}  // namespace hostport::agent::store
