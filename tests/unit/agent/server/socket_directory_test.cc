// The directory of an agent socket: made with its mode whatever the umask, and an existing one
// that another user may write refused, naming it.

#include "agent/server/socket_directory.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>

#include "tests/support/temp_dir.h"

namespace hostport::agent::server {
namespace {

using ::testing::HasSubstr;

mode_t modeOf(const std::filesystem::path& path) {
  struct stat info {};
  EXPECT_EQ(::stat(path.c_str(), &info), 0) << path;
  return info.st_mode & 07777;
}

/// Sets the process's umask for one scope (the test's threads make no files meanwhile).
class ScopedUmask {
 public:
  explicit ScopedUmask(mode_t mask) : was_(::umask(mask)) {}
  ~ScopedUmask() { ::umask(was_); }

 private:
  mode_t was_;
};

TEST(SocketDirectoryTest, MakesTheDirectoryAndItsParentsWithTheirModesWhateverTheUmask) {
  for (const mode_t mask : {mode_t{0}, mode_t{077}, mode_t{022}}) {
    test::TempDir dir;
    const auto socketDir = dir / "run" / "hostport";
    {
      ScopedUmask umask(mask);
      auto made = prepareSocketDirectory(socketDir, 0750);
      ASSERT_TRUE(made.has_value()) << made.error().message;
      EXPECT_TRUE(made->valid());
    }
    EXPECT_EQ(modeOf(socketDir), 0750u) << "umask " << mask;
    EXPECT_EQ(modeOf(dir / "run"), 0755u) << "umask " << mask;
  }
}

TEST(SocketDirectoryTest, TakesAnExistingDirectoryOfItsOwnAsItIs) {
  test::TempDir dir;
  const auto socketDir = dir / "sockets";
  ASSERT_EQ(::mkdir(socketDir.c_str(), 0700), 0);
  ASSERT_TRUE(prepareSocketDirectory(socketDir, 0755).has_value());
  EXPECT_EQ(modeOf(socketDir), 0700u) << "an existing directory's mode is the operator's";
}

TEST(SocketDirectoryTest, RefusesADirectoryOthersMayWriteNamingPathOwnerAndMode) {
  for (const mode_t mode : {mode_t{0777}, mode_t{0775}, mode_t{0757}, mode_t{01777}}) {
    test::TempDir dir;
    const auto socketDir = dir / "sockets";
    ASSERT_EQ(::mkdir(socketDir.c_str(), 0700), 0);
    ASSERT_EQ(::chmod(socketDir.c_str(), mode), 0);
    const auto refused = prepareSocketDirectory(socketDir, 0755);
    ASSERT_FALSE(refused.has_value()) << std::oct << mode;
    EXPECT_EQ(refused.error().code, ErrorCode::kNotAllowed);
    char expected[64];
    std::snprintf(expected, sizeof expected, " is mode %04o (owner uid %u): others may write it",
                  static_cast<unsigned>(mode), static_cast<unsigned>(::geteuid()));
    EXPECT_THAT(refused.error().message, HasSubstr(socketDir.string() + expected));
    EXPECT_EQ(modeOf(socketDir), mode) << "refused, not changed";
  }
}

TEST(SocketDirectoryTest, JudgesTheDirectoryASymlinkNamesAndRefusesAFile) {
  test::TempDir dir;
  const auto open = dir / "open";
  ASSERT_EQ(::mkdir(open.c_str(), 0700), 0);
  ASSERT_EQ(::chmod(open.c_str(), 0777), 0);
  const auto link = dir / "link";
  std::filesystem::create_directory_symlink(open, link);
  const auto throughLink = prepareSocketDirectory(link, 0755);
  ASSERT_FALSE(throughLink.has_value());
  EXPECT_THAT(throughLink.error().message, HasSubstr("is mode 0777"));

  const auto file = dir / "file";
  std::ofstream(file) << "x";
  const auto notADirectory = prepareSocketDirectory(file, 0755);
  ASSERT_FALSE(notADirectory.has_value());
  EXPECT_EQ(notADirectory.error().code, ErrorCode::kIo);
  EXPECT_THAT(notADirectory.error().message, HasSubstr(file.string()));
}

TEST(SocketDirectoryTest, RefusesADirectoryOfAnotherUser) {
  if (::geteuid() != 0) GTEST_SKIP() << "chown to another user needs root";
  test::TempDir dir;
  const auto socketDir = dir / "sockets";
  ASSERT_EQ(::mkdir(socketDir.c_str(), 0755), 0);
  ASSERT_EQ(::chown(socketDir.c_str(), 65534, 65534), 0);
  const auto refused = prepareSocketDirectory(socketDir, 0755);
  ASSERT_FALSE(refused.has_value());
  EXPECT_EQ(refused.error().code, ErrorCode::kNotAllowed);
  EXPECT_THAT(refused.error().message,
              HasSubstr(socketDir.string() +
                        " is mode 0755 (owner uid 65534): it belongs to another user"));
}

}  // namespace
}  // namespace hostport::agent::server
