// What a volume holds (agent/csi/volume_files.h): the two files, readable by any user and
// replaced whole, in a directory made only under the kubelet's, and removed without a trace.

#include "agent/csi/volume_files.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <sys/stat.h>

#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>

#include "tests/support/file_text.h"
#include "tests/support/temp_dir.h"

namespace hostport::agent::csi {
namespace {

using test::readText;

mode_t modeOf(const std::filesystem::path& path) {
  struct stat info {};
  EXPECT_EQ(::lstat(path.c_str(), &info), 0) << path;
  return info.st_mode & 07777;
}

Lease leaseOf(std::vector<PortGrant> ports) {
  Lease lease;
  lease.key = {"c0ffee", "eth0"};
  lease.pod = {"games", "server-0", "uid-1"};
  lease.ports = std::move(ports);
  return lease;
}

class VolumeFilesTest : public ::testing::Test {
 protected:
  void SetUp() override { std::filesystem::create_directories(dir_ / "volume"); }
  std::filesystem::path target() const { return dir_ / "volume" / "mount"; }
  test::TempDir dir_;
};

TEST_F(VolumeFilesTest, TheDirectoryIsMade0755WhateverTheUmask) {
  const mode_t old = ::umask(077);
  auto made = makeVolumeDirectory(target());
  ::umask(old);
  ASSERT_TRUE(made.has_value()) << made.error().message;
  EXPECT_EQ(modeOf(target()), 0755u);
  EXPECT_TRUE(makeVolumeDirectory(target()).has_value()) << "an existing one is kept";
}

TEST_F(VolumeFilesTest, NoDirectoryIsMadeWhereTheKubeletMadeNoRoom) {
  auto made = makeVolumeDirectory(dir_ / "missing" / "mount");
  ASSERT_FALSE(made.has_value());
  EXPECT_FALSE(std::filesystem::exists(dir_ / "missing"));
}

TEST_F(VolumeFilesTest, ASymlinkAtTheTargetIsNotFollowed) {
  std::filesystem::create_directory_symlink(dir_ / "elsewhere", target());
  std::filesystem::create_directories(dir_ / "elsewhere");
  EXPECT_FALSE(makeVolumeDirectory(target()).has_value());
}

TEST_F(VolumeFilesTest, TheFilesHoldThePodsPortsReadableByAnyone) {
  ASSERT_TRUE(makeVolumeDirectory(target()).has_value());
  const PodIdentity pod{"games", "server-0", "uid-1"};
  const std::vector<Lease> leases = {
      leaseOf({{"web", PortProtocol::kTcp, 30000, 80, 1, std::nullopt, false},
               {"rtp", PortProtocol::kUdp, 31000, 5000, 4, std::nullopt, false}})};
  auto written = writePortFiles(target(), pod, leases);
  ASSERT_TRUE(written.has_value()) << written.error().message;
  EXPECT_EQ(readText(target() / kPortsEnvFile),
            "HOSTPORT_WEB=30000\nHOSTPORT_RTP=31000-31003\nHOSTPORT_RTP_FIRST=31000\n"
            "HOSTPORT_RTP_LAST=31003\n");
  const auto json = nlohmann::json::parse(readText(target() / kPortsJsonFile));
  EXPECT_EQ(json["name"], "server-0");
  EXPECT_EQ(json["ports"][1]["hostPort"], 31000);
  EXPECT_EQ(modeOf(target() / kPortsJsonFile), 0644u);
  EXPECT_EQ(modeOf(target() / kPortsEnvFile), 0644u);

  ASSERT_TRUE(writePortFiles(target(), pod, {}).has_value());
  EXPECT_EQ(readText(target() / kPortsEnvFile), "");
  EXPECT_EQ(nlohmann::json::parse(readText(target() / kPortsJsonFile))["ports"],
            nlohmann::json::array());
}

TEST_F(VolumeFilesTest, RemovingTakesTheFilesAndALeftoverTemporaryButNothingElse) {
  ASSERT_TRUE(makeVolumeDirectory(target()).has_value());
  ASSERT_TRUE(writePortFiles(target(), {"games", "server-0", "uid-1"}, {}).has_value());
  std::ofstream(target() / ".ports.env.tmp-99") << "half";
  ASSERT_TRUE(removeVolumeDirectory(target()).has_value());
  EXPECT_FALSE(std::filesystem::exists(target()));
  EXPECT_TRUE(removeVolumeDirectory(target()).has_value()) << "gone already is success";

  ASSERT_TRUE(makeVolumeDirectory(target()).has_value());
  std::ofstream(target() / "theirs") << "a file the driver did not write";
  auto removed = removeVolumeDirectory(target());
  ASSERT_FALSE(removed.has_value());
  EXPECT_THAT(removed.error().message, ::testing::HasSubstr(target().string()));
  EXPECT_TRUE(std::filesystem::exists(target() / "theirs"));
}

}  // namespace
}  // namespace hostport::agent::csi
