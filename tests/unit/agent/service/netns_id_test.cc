#include "agent/service/netns_id.h"

#include <gtest/gtest.h>

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

// A plain file stands in for an nsfs one: liveness only compares the path's identity.
TEST(NetnsIdTest, APathIsAliveWhileItNamesTheRecordedFileAndGoneOnceItDoesNot) {
  test::TempDir dir;
  const std::string path = (dir / "cni-1").string();
  std::ofstream(path) << "ns";
  const NetnsId id = netnsIdOf(path);
  ASSERT_TRUE(id.known());
  EXPECT_EQ(netnsLiveness(sandboxOf(leaseAt(path, id))), NetnsLiveness::kAlive);

  // The same path, another namespace (paths like /proc/<pid>/ns/net are reused).
  std::ofstream(dir / "other") << "ns";
  std::filesystem::rename(dir / "other", path);
  EXPECT_EQ(netnsLiveness(sandboxOf(leaseAt(path, id))), NetnsLiveness::kGone);

  std::filesystem::remove(path);
  EXPECT_EQ(netnsLiveness(sandboxOf(leaseAt(path, id))), NetnsLiveness::kGone);
  EXPECT_FALSE(netnsIdOf(path).known());
}

TEST(NetnsIdTest, WithoutARecordedIdentityLivenessIsUnknown) {
  EXPECT_EQ(netnsLiveness(sandboxOf(leaseAt("/nonexistent/netns", {}))), NetnsLiveness::kUnknown);
  EXPECT_EQ(netnsLiveness(sandboxOf(leaseAt("", {1, 2}))), NetnsLiveness::kUnknown);
  EXPECT_FALSE(netnsIdOf("").known());
}

}  // namespace
}  // namespace hostport::agent::service
