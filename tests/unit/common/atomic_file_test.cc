#include "common/atomic_file.h"

#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>
#include <string>

#include "tests/support/temp_dir.h"

namespace hostport {
namespace {

TEST(AtomicFileTest, WritesReadsReplacesAndRemoves) {
  test::TempDir dir;
  const auto nested = dir / "a" / "b";
  for (const Durability durability : {Durability::kCache, Durability::kDurable}) {
    ASSERT_TRUE(writeFileAtomically(nested, "f", "one", durability).has_value());
    EXPECT_EQ(readSmallFile(nested / "f", 100).value(), "one");
    ASSERT_TRUE(writeFileAtomically(nested, "f", "two", durability).has_value());
    EXPECT_EQ(readSmallFile(nested / "f", 100).value(), "two");
  }
  struct stat info {};
  ASSERT_EQ(::stat((nested / "f").c_str(), &info), 0);
  EXPECT_EQ(info.st_mode & 0777, 0600u);
  // Nothing but the file itself is left behind: the temporary name went with the rename.
  EXPECT_EQ(std::distance(std::filesystem::directory_iterator(nested),
                          std::filesystem::directory_iterator()),
            1);
  ASSERT_TRUE(removeFile(nested / "f").has_value());
  EXPECT_EQ(readSmallFile(nested / "f", 100).value(), std::nullopt);
  EXPECT_TRUE(removeFile(nested / "f").has_value()) << "removing what is gone succeeds";
}

TEST(AtomicFileTest, AFailedBeforeRenameLeavesTheFileAndNoTempFile) {
  test::TempDir dir;
  ASSERT_TRUE(writeFileAtomically(dir.path(), "f", "one", Durability::kDurable));
  bool tempComplete = false;
  const auto written = writeFileAtomically(
      dir.path(), "f", "two", Durability::kDurable, 0600, [&]() -> Result<void> {
        const auto temp = dir / (".f.tmp-" + std::to_string(::getpid()));
        tempComplete = readSmallFile(temp, 100).value() == "two";
        return fail(ErrorCode::kConflict, "changed");
      });
  ASSERT_FALSE(written.has_value());
  EXPECT_EQ(written.error().message, "changed");
  EXPECT_TRUE(tempComplete) << "runs once the temp file is written";
  EXPECT_EQ(readSmallFile(dir / "f", 100).value(), "one");
  EXPECT_EQ(std::distance(std::filesystem::directory_iterator(dir.path()),
                          std::filesystem::directory_iterator()),
            1);
}

TEST(AtomicFileTest, RefusesAFileLargerThanTheBound) {
  test::TempDir dir;
  ASSERT_TRUE(writeFileAtomically(dir.path(), "big", std::string(5000, 'x'), Durability::kCache));
  EXPECT_EQ(readSmallFile(dir / "big", 5000).value()->size(), 5000u);
  const auto tooBig = readSmallFile(dir / "big", 4999);
  ASSERT_FALSE(tooBig.has_value());
  EXPECT_EQ(tooBig.error().code, ErrorCode::kDecode);
}

TEST(AtomicFileTest, FailsWithTheErrnoWhenTheDirectoryCannotBeMade) {
  test::TempDir dir;
  ASSERT_TRUE(writeFileAtomically(dir.path(), "file", "x", Durability::kCache));
  const auto written = writeFileAtomically(dir / "file" / "sub", "f", "x", Durability::kCache);
  ASSERT_FALSE(written.has_value());
  EXPECT_EQ(written.error().code, ErrorCode::kIo);
  EXPECT_TRUE(written.error().cause) << written.error().message;
}

}  // namespace
}  // namespace hostport
