// The published volumes (agent/csi/pod_volumes.h) in a kubelet directory of the test's: files
// that follow the pod's leases and no other pod's, publish and unpublish that are idempotent and
// leave nothing half done, a restart that takes the volumes up again, and a sweep that forgets
// what the kubelet removed. Sockets are the netns test's (tests/netns/agent_csi_test.cc).

#include "agent/csi/pod_volumes.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <fstream>
#include <sstream>

#include "agent/csi/volume_files.h"
#include "tests/support/file_text.h"
#include "tests/support/temp_dir.h"

namespace hostport::agent::csi {
namespace {

using ::testing::HasSubstr;

using test::readText;

class PodVolumesTest : public ::testing::Test {
 protected:
  /// A volume of pod `uid` whose directory the kubelet made.
  PodVolume volumeOf(const std::string& id, const std::string& uid) {
    const auto dir = kubelet() / "pods" / uid / "volumes" / "kubernetes.io~csi" / id;
    std::filesystem::create_directories(dir);
    return {id, {dir / "mount", uid}, {"games", "pod-" + uid, uid}};
  }
  std::filesystem::path kubelet() const { return dir_ / "kubelet"; }
  VolumeRecords records() const { return {dir_ / "state" / "csi-volumes", kubelet()}; }
  std::unique_ptr<PodVolumes> makeVolumes() {
    return std::make_unique<PodVolumes>(
        [this](const std::string& uid) {
          std::vector<Lease> found;
          for (const Lease& lease : leases_) {
            if (lease.pod.uid == uid) found.push_back(lease);
          }
          return found;
        },
        ServeVolumeSocket{}, records());
  }
  Lease grant(const std::string& uid, uint16_t port) {
    Lease lease;
    lease.key = {"sandbox-" + uid, "eth0"};
    lease.pod = {"games", "pod-" + uid, uid};
    lease.ports = {{"web", PortProtocol::kTcp, port, 80, 1, std::nullopt, false}};
    leases_.push_back(lease);
    return lease;
  }

  test::TempDir dir_;
  std::vector<Lease> leases_;
};

TEST_F(PodVolumesTest, APublishedVolumeHoldsItsPodsPortsAndFollowsTheirGrants) {
  auto volumes = makeVolumes();
  const PodVolume a = volumeOf("csi-a", "uid-a");
  const PodVolume b = volumeOf("csi-b", "uid-b");
  grant("uid-b", 30001);
  ASSERT_TRUE(volumes->publish(a).has_value());
  ASSERT_TRUE(volumes->publish(b).has_value());
  EXPECT_EQ(readText(a.target.path / kPortsEnvFile), "") << "no lease yet: no port";
  EXPECT_EQ(readText(b.target.path / kPortsEnvFile), "HOSTPORT_WEB=30001\n");

  volumes->leaseChanged(grant("uid-a", 30000));
  EXPECT_EQ(readText(a.target.path / kPortsEnvFile), "HOSTPORT_WEB=30000\n");
  EXPECT_EQ(readText(b.target.path / kPortsEnvFile), "HOSTPORT_WEB=30001\n")
      << "another pod's grant never reaches this pod's volume";
  EXPECT_THAT(readText(a.target.path / kPortsJsonFile), HasSubstr("\"name\":\"pod-uid-a\""));
}

TEST_F(PodVolumesTest, PublishIsIdempotentAndAConflictingOneIsRefused) {
  auto volumes = makeVolumes();
  const PodVolume a = volumeOf("csi-a", "uid-a");
  ASSERT_TRUE(volumes->publish(a).has_value());
  EXPECT_TRUE(volumes->publish(a).has_value());

  PodVolume moved = volumeOf("csi-a", "uid-c");
  auto refused = volumes->publish(moved);
  ASSERT_FALSE(refused.has_value());
  EXPECT_EQ(refused.error().code, ErrorCode::kConflict);
  EXPECT_THAT(refused.error().message, HasSubstr("volume csi-a is published at"));
  EXPECT_FALSE(std::filesystem::exists(moved.target.path));

  PodVolume sameTarget = a;
  sameTarget.volumeId = "csi-other";
  EXPECT_EQ(volumes->publish(sameTarget).error().code, ErrorCode::kConflict);
}

TEST_F(PodVolumesTest, AFailedPublishLeavesNothing) {
  std::filesystem::create_directories(dir_ / "state");
  std::ofstream(dir_ / "state" / "csi-volumes") << "a file where the records' directory goes";
  auto volumes = makeVolumes();
  const PodVolume a = volumeOf("csi-a", "uid-a");
  auto published = volumes->publish(a);
  ASSERT_FALSE(published.has_value());
  EXPECT_THAT(published.error().message, HasSubstr("cannot record the volume"));
  EXPECT_FALSE(std::filesystem::exists(a.target.path));
  std::filesystem::remove(dir_ / "state" / "csi-volumes");
  EXPECT_TRUE(volumes->publish(a).has_value()) << "and the same publish may come again";
}

TEST_F(PodVolumesTest, UnpublishRemovesTheDirectoryAndTheRecordEvenOfAVolumeItDoesNotKnow) {
  auto volumes = makeVolumes();
  const PodVolume a = volumeOf("csi-a", "uid-a");
  ASSERT_TRUE(volumes->publish(a).has_value());
  ASSERT_TRUE(volumes->unpublish("csi-a", a.target).has_value());
  EXPECT_FALSE(std::filesystem::exists(a.target.path));
  EXPECT_TRUE(records().load()->volumes.empty());
  EXPECT_TRUE(volumes->unpublish("csi-a", a.target).has_value()) << "twice is success";

  // Never another volume's directory, whatever id names it.
  const PodVolume b = volumeOf("csi-b", "uid-b");
  ASSERT_TRUE(volumes->publish(b).has_value());
  auto refused = volumes->unpublish("csi-x", b.target);
  ASSERT_FALSE(refused.has_value());
  EXPECT_EQ(refused.error().code, ErrorCode::kConflict);
  EXPECT_TRUE(std::filesystem::exists(b.target.path / kPortsEnvFile));

  // What an agent that crashed mid-unpublish left: files, no record.
  ASSERT_TRUE(makeVolumeDirectory(a.target.path).has_value());
  ASSERT_TRUE(writePortFiles(a.target.path, a.pod, {}).has_value());
  ASSERT_TRUE(makeVolumes()->unpublish("csi-a", a.target).has_value());
  EXPECT_FALSE(std::filesystem::exists(a.target.path));
}

TEST_F(PodVolumesTest, ARestartedAgentTakesItsVolumesUpAgainAndForgetsThoseTheKubeletRemoved) {
  const PodVolume kept = volumeOf("csi-kept", "uid-kept");
  const PodVolume removed = volumeOf("csi-removed", "uid-removed");
  {
    auto volumes = makeVolumes();
    ASSERT_TRUE(volumes->publish(kept).has_value());
    ASSERT_TRUE(volumes->publish(removed).has_value());
  }
  std::filesystem::remove_all(kubelet() / "pods" / "uid-removed");
  grant("uid-kept", 30005);  // granted while the agent was down
  auto volumes = makeVolumes();
  volumes->restore();
  EXPECT_EQ(readText(kept.target.path / kPortsEnvFile), "HOSTPORT_WEB=30005\n");
  EXPECT_THAT(records().load()->volumes, ::testing::ElementsAre(kept));
}

TEST_F(PodVolumesTest, TheSweepForgetsAVolumeWhoseDirectoryTheKubeletRemovedUntold) {
  auto volumes = makeVolumes();
  const PodVolume a = volumeOf("csi-a", "uid-a");
  const PodVolume b = volumeOf("csi-b", "uid-b");
  ASSERT_TRUE(volumes->publish(a).has_value());
  ASSERT_TRUE(volumes->publish(b).has_value());
  std::filesystem::remove_all(kubelet() / "pods" / "uid-a");
  volumes->sweep();
  EXPECT_THAT(records().load()->volumes, ::testing::ElementsAre(b));
  prometheus::TextWriter metrics;
  volumes->writeMetrics(metrics);
  EXPECT_THAT(metrics.text(), HasSubstr("hostport_csi_volumes 1\n"));
}

}  // namespace
}  // namespace hostport::agent::csi
