#include "agent/service/netns_id.h"

#include <gtest/gtest.h>
#include <sys/stat.h>

#include <fstream>

#include "tests/support/temp_dir.h"

namespace hostport::agent::service {
namespace {

Lease leaseAt(const std::string& path, NetnsId id) {
  Lease lease;
  lease.key = {"c", "eth0"};
  lease.netns = path;
  lease.netnsId = id;
  return lease;
}

NetnsId statOf(const std::string& path) {
  struct stat info {};
  EXPECT_EQ(::stat(path.c_str(), &info), 0) << path;
  return {static_cast<uint64_t>(info.st_dev), static_cast<uint64_t>(info.st_ino)};
}

// A plain file stands in for an nsfs one: liveness only compares the path's identity.
TEST(NetnsIdTest, APathIsAliveWhileItNamesTheRecordedFileAndGoneOnceItDoesNot) {
  test::TempDir dir;
  const std::string path = (dir / "cni-1").string();
  std::ofstream(path) << "ns";
  const NetnsId id = statOf(path);
  ASSERT_TRUE(id.known());
  EXPECT_EQ(netnsLiveness(sandboxOf(leaseAt(path, id))), NetnsLiveness::kAlive);

  // The same path, another namespace (paths like /proc/<pid>/ns/net are reused).
  std::ofstream(dir / "other") << "ns";
  std::filesystem::rename(dir / "other", path);
  EXPECT_EQ(netnsLiveness(sandboxOf(leaseAt(path, id))), NetnsLiveness::kGone);

  std::filesystem::remove(path);
  EXPECT_EQ(netnsLiveness(sandboxOf(leaseAt(path, id))), NetnsLiveness::kGone);
}

TEST(NetnsIdTest, WithoutARecordedIdentityLivenessIsUnknown) {
  EXPECT_EQ(netnsLiveness(sandboxOf(leaseAt("/nonexistent/netns", {}))), NetnsLiveness::kUnknown);
  EXPECT_EQ(netnsLiveness(sandboxOf(leaseAt("", {1, 2}))), NetnsLiveness::kUnknown);
}

TEST(NetnsIdTest, RecordsTheIdentityOfANetworkNamespace) {
  const auto id = netnsIdOf("/proc/self/ns/net");
  ASSERT_TRUE(id.has_value()) << id.error().message;
  EXPECT_EQ(*id, statOf("/proc/self/ns/net"));
}

// The agent may not see what the plugin sees (another mount namespace): nothing to judge by.
TEST(NetnsIdTest, LeavesTheIdentityUnknownForAPathTheAgentCannotSee) {
  for (const std::string path : {"", "/nonexistent/netns"}) {
    const auto id = netnsIdOf(path);
    ASSERT_TRUE(id.has_value()) << path << ": " << id.error().message;
    EXPECT_FALSE(id->known()) << path;
  }
}

// The plugin checks CNI_NETNS, and the agent does not take its word for it.
TEST(NetnsIdTest, RefusesAPathThatLeadsToAnythingButANetworkNamespace) {
  test::TempDir dir;
  const std::string file = (dir / "file").string();
  std::ofstream(file) << "not a namespace";
  for (const auto& [path, what] : {std::pair<std::string, std::string>{file, "a regular file"},
                                   {"/dev/zero", "a character device"},
                                   {"/proc/self/ns/mnt", "a mnt namespace"}}) {
    const auto id = netnsIdOf(path);
    ASSERT_FALSE(id.has_value()) << path;
    EXPECT_EQ(id.error().code, ErrorCode::kInvalidArgument);
    EXPECT_EQ(id.error().message,
              "netns: \"" + path + "\" is " + what + ", not a network namespace");
  }
}

}  // namespace
}  // namespace hostport::agent::service
