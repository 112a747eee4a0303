// The published volumes' records (agent/csi/volume_records.h): what is saved reads back, a
// removed one is gone, and a damaged or foreign record is skipped with its reason.

#include "agent/csi/volume_records.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <fstream>

#include "tests/support/temp_dir.h"

namespace hostport::agent::csi {
namespace {

PodVolume volumeOf(const std::string& id, const std::string& uid) {
  const std::string path =
      "/var/lib/kubelet/pods/" + uid + "/volumes/kubernetes.io~csi/ports/mount";
  return {id, {path, uid}, {"games", "server-" + uid, uid}};
}

TEST(VolumeRecordsTest, WhatIsSavedReadsBackAndWhatIsRemovedIsGone) {
  test::TempDir dir;
  VolumeRecords records(dir / "csi-volumes", "/var/lib/kubelet");
  auto none = records.load();
  ASSERT_TRUE(none.has_value()) << none.error().message;
  EXPECT_TRUE(none->volumes.empty());

  ASSERT_TRUE(records.save(volumeOf("csi-a", "uid-a")).has_value());
  ASSERT_TRUE(records.save(volumeOf("csi-b", "uid-b")).has_value());
  ASSERT_TRUE(records.remove("csi-a").has_value());
  ASSERT_TRUE(records.remove("csi-a").has_value()) << "removing a missing record is success";
  auto loaded = records.load();
  ASSERT_TRUE(loaded.has_value()) << loaded.error().message;
  EXPECT_THAT(loaded->volumes, ::testing::ElementsAre(volumeOf("csi-b", "uid-b")));
  EXPECT_TRUE(loaded->skipped.empty());
}

TEST(VolumeRecordsTest, ADamagedRecordOrOneOutsideTheKubeletsPodsIsSkipped) {
  test::TempDir dir;
  VolumeRecords records(dir / "csi-volumes", "/var/lib/kubelet");
  ASSERT_TRUE(records.save(volumeOf("csi-good", "uid-good")).has_value());
  std::ofstream(dir / "csi-volumes" / "csi-torn.json") << "{\"volumeId\": \"csi-t";
  VolumeRecords elsewhere(dir / "csi-volumes", "/var/lib/other-kubelet");
  std::ofstream(dir / "csi-volumes" / ".csi-x.json.tmp-1") << "a temporary file";
  auto loaded = records.load();
  ASSERT_TRUE(loaded.has_value());
  EXPECT_THAT(loaded->volumes, ::testing::ElementsAre(volumeOf("csi-good", "uid-good")));
  ASSERT_EQ(loaded->skipped.size(), 1u);
  EXPECT_THAT(loaded->skipped[0].message, ::testing::HasSubstr("csi-torn.json"));

  auto foreign = elsewhere.load();
  ASSERT_TRUE(foreign.has_value());
  EXPECT_TRUE(foreign->volumes.empty());
  EXPECT_EQ(foreign->skipped.size(), 2u);
}

}  // namespace
}  // namespace hostport::agent::csi
