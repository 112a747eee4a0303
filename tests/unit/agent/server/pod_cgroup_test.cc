// The pod a process's cgroups name (agent/server/pod_cgroup.h), in the lines real nodes show:
// both kubelet cgroup drivers, cgroup v1 and v2, a path above the reader's cgroup namespace, a
// --cgroup-root; and the callers that must not be taken for a pod.

#include "agent/server/pod_cgroup.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <string>

namespace hostport::agent::server {
namespace {

using ::testing::HasSubstr;

constexpr std::string_view kUid = "1b4e28ba-2fa1-11d2-883f-0016d3cca427";

std::optional<std::string> podOf(std::string_view text) {
  auto uid = podUidOfCgroups(text);
  EXPECT_TRUE(uid.has_value()) << uid.error().message;
  return uid ? *uid : std::nullopt;
}

TEST(PodCgroupTest, ReadsTheSystemdDriversSliceInCgroupV2) {
  EXPECT_EQ(podOf("0::/kubepods.slice/kubepods-burstable.slice/"
                  "kubepods-burstable-pod1b4e28ba_2fa1_11d2_883f_0016d3cca427.slice/"
                  "cri-containerd-4c1f0e.scope\n"),
            kUid);
  // Guaranteed pods sit right under kubepods.slice; CRI-O names its scopes crio-<id>.
  EXPECT_EQ(podOf("0::/kubepods.slice/kubepods-pod1b4e28ba_2fa1_11d2_883f_0016d3cca427.slice/"
                  "crio-9e2d.scope\n"),
            kUid);
}

TEST(PodCgroupTest, ReadsTheCgroupfsDriversDirectoryInCgroupV1) {
  const std::string lines =
      "12:pids:/kubepods/besteffort/pod1b4e28ba-2fa1-11d2-883f-0016d3cca427/4c1f0e\n"
      "11:cpu,cpuacct:/kubepods/besteffort/pod1b4e28ba-2fa1-11d2-883f-0016d3cca427/4c1f0e\n"
      "1:name=systemd:/kubepods/besteffort/pod1b4e28ba-2fa1-11d2-883f-0016d3cca427/4c1f0e\n"
      "0::/\n";
  EXPECT_EQ(podOf(lines), kUid);
  EXPECT_EQ(podOf("3:memory:/kubepods/pod1b4e28ba-2fa1-11d2-883f-0016d3cca427/4c1f0e\n"), kUid);
}

TEST(PodCgroupTest, ReadsAPathAboveTheReadersCgroupNamespaceAndBelowACgroupRoot) {
  // The agent in a cgroup namespace of its own sees another pod's path from its own root up.
  EXPECT_EQ(podOf("0::/../../kubepods-besteffort.slice/"
                  "kubepods-besteffort-pod1b4e28ba_2fa1_11d2_883f_0016d3cca427.slice/"
                  "cri-containerd-4c1f0e.scope\n"),
            kUid);
  EXPECT_EQ(
      podOf("0::/node.slice/node-kubepods.slice/node-kubepods-burstable.slice/"
            "node-kubepods-burstable-pod1b4e28ba_2fa1_11d2_883f_0016d3cca427.slice/x.scope\n"),
      kUid);
  EXPECT_EQ(podOf("0::/custom/kubepods/burstable/pod1b4e28ba-2fa1-11d2-883f-0016d3cca427/x\n"),
            kUid);
}

TEST(PodCgroupTest, AStaticPodsHashIsAUidToo) {
  EXPECT_EQ(podOf("0::/kubepods/burstable/pod6a0d3b4bb2e1b7f0d4c8a3b2c1d0e9f8/x\n"),
            "6a0d3b4bb2e1b7f0d4c8a3b2c1d0e9f8");
}

TEST(PodCgroupTest, ANodeProcessOrAnotherManagersCgroupIsNoPod) {
  for (const std::string_view text : {
           "0::/system.slice/containerd.service\n",
           "0::/user.slice/user-0.slice/session-3.scope\n",
           "0::/\n",
           "12:pids:/\n1:name=systemd:/init.scope\n0::/init.scope\n",
           // podman's pods and a cgroup merely named pod-something are not the kubelet's.
           "0::/machine.slice/machine-libpod_pod_4c1f0e.slice/libpod-9e2d.scope\n",
           "0::/kubepods.slice/kubepods-burstable.slice/kubepods-burstable-podman.slice\n",
           "0::/pod1b4e28ba-2fa1-11d2-883f-0016d3cca427/x\n",  // not below kubepods
           "0::/kubepods/burstable/pod/x\n",
           "",
       }) {
    EXPECT_EQ(podOf(text), std::nullopt) << text;
  }
}

TEST(PodCgroupTest, TwoPodsInOnePathAreRefused) {
  // A process allowed to make cgroups below its own pod's could name one after another pod.
  auto uid = podUidOfCgroups(
      "0::/kubepods/burstable/pod1b4e28ba-2fa1-11d2-883f-0016d3cca427/x/"
      "kubepods-besteffort-pod99999999_2fa1_11d2_883f_0016d3cca427.slice\n");
  ASSERT_FALSE(uid.has_value());
  EXPECT_THAT(uid.error().message, HasSubstr("names two pods"));
}

TEST(PodCgroupTest, LinesThatNameDifferentPodsAreRefused) {
  auto uid = podUidOfCgroups(
      "12:pids:/kubepods/burstable/pod1b4e28ba-2fa1-11d2-883f-0016d3cca427/x\n"
      "1:name=systemd:/kubepods/burstable/pod99999999-2fa1-11d2-883f-0016d3cca427/x\n");
  ASSERT_FALSE(uid.has_value());
  EXPECT_THAT(uid.error().message, HasSubstr("name two pods"));
}

TEST(PodCgroupTest, AUidOfWrongCharactersOrLengthIsNoUid) {
  EXPECT_EQ(podOf("0::/kubepods/burstable/podXYZ/x\n"), std::nullopt);
  EXPECT_EQ(podOf("0::/kubepods/burstable/pod" + std::string(65, 'a') + "/x\n"), std::nullopt);
  EXPECT_EQ(podOf("0::/kubepods/burstable/pod" + std::string(64, 'a') + "/x\n"),
            std::string(64, 'a'));
}

}  // namespace
}  // namespace hostport::agent::server
