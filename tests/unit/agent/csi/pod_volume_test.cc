// What NodePublishVolume may ask (agent/csi/pod_volume.h): only an ephemeral volume of the pod
// whose directory the target path is in, under the kubelet's pods, with ids a file can hold.

#include "agent/csi/pod_volume.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

namespace hostport::agent::csi {
namespace {

using ::testing::HasSubstr;

constexpr const char* kUid = "8e1b6f0c-3c5d-4f1e-9a7b-2d4c6e8f0a1b";
const std::filesystem::path kKubelet = "/var/lib/kubelet";

std::string targetOf(const std::string& uid, const std::string& volume = "ports") {
  return "/var/lib/kubelet/pods/" + uid + "/volumes/kubernetes.io~csi/" + volume + "/mount";
}

std::map<std::string, std::string> contextOf(const std::string& uid) {
  return {{std::string(kPodNameKey), "server-0"},
          {std::string(kPodNamespaceKey), "games"},
          {std::string(kPodUidKey), uid},
          {std::string(kServiceAccountKey), "default"},
          {std::string(kEphemeralKey), "true"}};
}

TEST(PodVolumeTest, AKubeletTargetPathNamesItsPod) {
  auto target = parseTargetPath(targetOf(kUid), kKubelet);
  ASSERT_TRUE(target.has_value()) << target.error().message;
  EXPECT_EQ(target->podUid, kUid);
  EXPECT_EQ(target->path, targetOf(kUid));
}

TEST(PodVolumeTest, ATargetPathOutsideAPodsVolumeDirectoryIsRefusedNamingIt) {
  for (const std::string& bad : std::vector<std::string>{
           std::string("relative/pods/x/volumes/kubernetes.io~csi/v/mount"), std::string("/etc"),
           std::string("/var/lib/kubelet/pods/") + kUid + "/volumes/kubernetes.io~csi/v",
           std::string("/var/lib/kubelet/pods/") + kUid +
               "/volumes/kubernetes.io~empty-dir/v/mount",
           std::string("/var/lib/kubelet/pods/") + kUid + "/volumes/kubernetes.io~csi/v/mount/x",
           std::string("/var/lib/kubelet/pods/../volumes/kubernetes.io~csi/v/mount"),
           std::string("/var/lib/kubelet/pods/") + kUid + "/volumes/kubernetes.io~csi/../mount",
           targetOf(kUid).insert(17, "/"),  // "//"
           std::string("/var/lib/kubelet/pods/./volumes/kubernetes.io~csi/v/mount"),
           std::string("/var/lib/other/pods/") + kUid + "/volumes/kubernetes.io~csi/v/mount"}) {
    auto target = parseTargetPath(bad, kKubelet);
    ASSERT_FALSE(target.has_value()) << bad;
    EXPECT_EQ(target.error().code, ErrorCode::kInvalidArgument) << bad;
    EXPECT_THAT(target.error().message, HasSubstr("target_path: \"" + bad + "\"")) << bad;
  }
}

TEST(PodVolumeTest, AVolumeIdMustBeAFileName) {
  EXPECT_TRUE(checkVolumeId("csi-0f3a9c1b2e").has_value());
  for (const std::string& bad :
       std::vector<std::string>{"", ".hidden", "a/b", "..", std::string(129, 'a'), "a b"}) {
    auto checked = checkVolumeId(bad);
    ASSERT_FALSE(checked.has_value()) << bad;
    EXPECT_THAT(checked.error().message, HasSubstr("volume_id")) << bad;
  }
}

TEST(PodVolumeTest, AnEphemeralVolumeOfThePodInTheTargetPathIsItsPodVolume) {
  auto volume = podVolumeOf("csi-1", targetOf(kUid), contextOf(kUid), kKubelet);
  ASSERT_TRUE(volume.has_value()) << volume.error().message;
  EXPECT_EQ(volume->pod, (PodIdentity{"games", "server-0", kUid}));
  EXPECT_EQ(volume->target.podUid, kUid);
}

TEST(PodVolumeTest, MissingPodInfoIsRefusedNamingTheKeyAndPodInfoOnMount) {
  for (const std::string_view key : {kPodNameKey, kPodNamespaceKey, kPodUidKey}) {
    auto context = contextOf(kUid);
    context.erase(std::string(key));
    auto volume = podVolumeOf("csi-1", targetOf(kUid), context, kKubelet);
    ASSERT_FALSE(volume.has_value()) << key;
    EXPECT_EQ(volume.error().code, ErrorCode::kInvalidArgument);
    EXPECT_THAT(volume.error().message, HasSubstr(std::string(key) + " is missing"));
    EXPECT_THAT(volume.error().message, HasSubstr("podInfoOnMount"));
  }
}

TEST(PodVolumeTest, APersistentVolumeIsRefused) {
  auto context = contextOf(kUid);
  context.erase(std::string(kEphemeralKey));
  auto volume = podVolumeOf("csi-1", targetOf(kUid), context, kKubelet);
  ASSERT_FALSE(volume.has_value());
  EXPECT_THAT(volume.error().message, HasSubstr("ephemeral inline volumes only"));
}

TEST(PodVolumeTest, AnotherPodsTargetPathIsRefused) {
  auto volume = podVolumeOf("csi-1", targetOf("another-uid"), contextOf(kUid), kKubelet);
  ASSERT_FALSE(volume.has_value());
  EXPECT_THAT(volume.error().message, HasSubstr("pod another-uid's directory"));
  EXPECT_THAT(volume.error().message, HasSubstr(std::string("names pod ") + kUid));
}

TEST(PodVolumeTest, VolumeAttributesAreRefusedNamingTheKey) {
  auto context = contextOf(kUid);
  context["port"] = "web";
  auto volume = podVolumeOf("csi-1", targetOf(kUid), context, kKubelet);
  ASSERT_FALSE(volume.has_value());
  EXPECT_THAT(volume.error().message, HasSubstr("volume_context: \"port\" (\"web\")"));
  EXPECT_THAT(volume.error().message, HasSubstr("takes no volumeAttributes"));
}

}  // namespace
}  // namespace hostport::agent::csi
