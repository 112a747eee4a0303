// The hostport.io CSI driver of a real hostport-agent, driven as the kubelet drives it
// (tests/fakes/fake_kubelet_csi.h, over the real gRPC sockets) on a node whose pods the real
// bridge and hostport plugins set up: the registration handshake, a volume published before the
// sandbox's ADD that holds the pod's ports once ADD is answered (read right after, never waited
// for), the volume's own socket that answers that pod alone, unpublish, a restart, and the
// requests the driver refuses with the CSI codes, leaving nothing behind.

#include <grpcpp/grpcpp.h>
#include <sys/stat.h>

#include <fstream>
#include <sstream>

#include "agent/csi/csi_driver.h"
#include "agent/csi/volume_files.h"
#include "tests/fakes/fake_kubelet_csi.h"
#include "tests/netns/agent_plugin_fixture.h"
#include "tests/support/file_text.h"
#include "tests/support/pod_caller.h"
#include "tests/support/pod_cgroup.h"
#include "tests/support/subprocess.h"
#include "tests/support/temp_dir.h"

namespace hostport::test {
namespace {

using ::testing::HasSubstr;

constexpr const char* kNodeName = "node-csi";
constexpr const char* kVolume = "ports";

class AgentCsiTest : public AgentPluginTest {
 protected:
  void SetUp() override {
    AgentPluginTest::SetUp();
    if (HasFatalFailure() || IsSkipped()) return;
    ASSERT_NO_FATAL_FAILURE(
        startAgent(kSmallPool, {"--csi-driver", "true", "--kubelet-dir", kubeletDir().string(),
                                "--node-name", kNodeName}));
    kubelet_ = std::make_unique<FakeKubeletCsi>(kubeletDir());
    pluginregistration::PluginInfo info;
    const auto registered =
        kubelet_->registerPlugin(agent::csi::registrationSocketPath(kubeletDir()), &info);
    ASSERT_TRUE(registered.ok()) << registered.error_message() << agent_->describe();
    kubelet_->connect(info.endpoint());
  }

  std::filesystem::path kubeletDir() const { return dir_ / "kubelet"; }
  static FakeCsiPod csiPod(const Pod& pod) { return {"games", pod.label, pod.uid}; }
  std::filesystem::path targetOf(const Pod& pod) const {
    return kubelet_->targetOf(csiPod(pod), kVolume);
  }

  /// A pod bridged, its volume published, then ADDed through the agent: the kubelet's order.
  Pod* publishedPod(const std::string& label, const std::string& ports) {
    Pod* pod = bridgedPod(label);
    if (pod == nullptr) return nullptr;
    const auto published = kubelet_->publish(csiPod(*pod), kVolume);
    EXPECT_TRUE(published.ok()) << published.error_message() << agent_->describe();
    auto added = node().add(*pod, withAgent(ports));
    if (!added || !added->ok()) {
      ADD_FAILURE() << "ADD of " << label << ": "
                    << (added ? added->describe() : added.error().message);
      return nullptr;
    }
    return pod;
  }

  /// The volume's socket by a path short enough for sun_path, as a container reaches it at its
  /// mount point: the kubelet's own path is longer than 108 bytes.
  std::string volumeSocket(const Pod& pod) {
    const auto link = dir_ / ("v-" + pod.label);
    if (!std::filesystem::exists(link)) {
      std::filesystem::create_directory_symlink(targetOf(pod), link);
    }
    return (link / agent::csi::kPodSocketFile).string();
  }

  /// GET `target` on the volume's own socket, from this process.
  HttpAnswer askVolume(const Pod& pod, const std::string& target) {
    auto socket = connectUnix(volumeSocket(pod));
    if (!socket) {
      ADD_FAILURE() << "connect to " << pod.label << "'s volume socket: " << socket.error().message;
      return {};
    }
    auto answer = httpGet(socket->get(), target);
    if (!answer) {
      ADD_FAILURE() << "GET " << target << ": " << answer.error().message;
      return {};
    }
    return *answer;
  }

  TempDir dir_;
  std::unique_ptr<FakeKubeletCsi> kubelet_;
};

TEST_F(AgentCsiTest, TheKubeletRegistersTheDriverAndFindsANodePluginOfInlineVolumes) {
  pluginregistration::PluginInfo info;
  ASSERT_TRUE(
      kubelet_->registerPlugin(agent::csi::registrationSocketPath(kubeletDir()), &info).ok());
  EXPECT_EQ(info.type(), "CSIPlugin");
  EXPECT_EQ(info.name(), "hostport.io");
  EXPECT_EQ(info.endpoint(), agent::csi::csiSocketPath(kubeletDir()).string());
  EXPECT_THAT(info.supported_versions(), ::testing::ElementsAre("1.0.0"));
  EXPECT_TRUE(agent_->waitForLog("csi.registered")) << agent_->describe();

  csi::v1::GetPluginInfoResponse plugin;
  ASSERT_TRUE(kubelet_->identity().GetPluginInfo(csiCallContext().get(), {}, &plugin).ok());
  EXPECT_EQ(plugin.name(), "hostport.io");
  csi::v1::GetPluginCapabilitiesResponse capabilities;
  ASSERT_TRUE(
      kubelet_->identity().GetPluginCapabilities(csiCallContext().get(), {}, &capabilities).ok());
  EXPECT_EQ(capabilities.capabilities_size(), 0) << "no controller service, no topology";
  csi::v1::ProbeResponse probe;
  ASSERT_TRUE(kubelet_->identity().Probe(csiCallContext().get(), {}, &probe).ok());
  EXPECT_TRUE(probe.ready().value());
  csi::v1::NodeGetCapabilitiesResponse nodeCapabilities;
  ASSERT_TRUE(
      kubelet_->node().NodeGetCapabilities(csiCallContext().get(), {}, &nodeCapabilities).ok());
  EXPECT_EQ(nodeCapabilities.capabilities_size(), 0) << "no staging: publish is called directly";
  csi::v1::NodeGetInfoResponse nodeInfo;
  ASSERT_TRUE(kubelet_->node().NodeGetInfo(csiCallContext().get(), {}, &nodeInfo).ok());
  EXPECT_EQ(nodeInfo.node_id(), kNodeName);

  struct stat socket {};
  ASSERT_EQ(::stat(agent::csi::csiSocketPath(kubeletDir()).c_str(), &socket), 0);
  EXPECT_EQ(socket.st_mode & 0777, 0600u) << "the kubelet, root, alone may call it";
}

TEST_F(AgentCsiTest, AVolumePublishedBeforeAddHoldsThePodsPortsOnceAddIsAnswered) {
  Pod* pod = publishedPod("pod-a", "web=80, rtp=5000-5003/udp");
  ASSERT_NE(pod, nullptr);
  const uint16_t web = grantedPort(*pod, "web", PortProtocol::kTcp);
  const uint16_t rtp = grantedPort(*pod, "rtp", PortProtocol::kUdp, 4);
  // Read at once: the agent wrote them before it answered the ADD.
  const std::string env = readText(targetOf(*pod) / agent::csi::kPortsEnvFile);
  EXPECT_EQ(env, "HOSTPORT_WEB=" + std::to_string(web) + "\nHOSTPORT_RTP=" + std::to_string(rtp) +
                     "-" + std::to_string(rtp + 3) + "\nHOSTPORT_RTP_FIRST=" + std::to_string(rtp) +
                     "\nHOSTPORT_RTP_LAST=" + std::to_string(rtp + 3) + "\n");
  const auto json = nlohmann::json::parse(readText(targetOf(*pod) / agent::csi::kPortsJsonFile));
  EXPECT_EQ(json["namespace"], "games");
  EXPECT_EQ(json["name"], "pod-a");
  EXPECT_EQ(json["ports"][0]["hostPort"], web);

  // The volume's own socket answers this pod's ports, to any caller that reaches it.
  const HttpAnswer self = askVolume(*pod, "/v1/self");
  EXPECT_EQ(self.status, 200u) << self.body;
  EXPECT_EQ(nlohmann::json::parse(self.body)["ports"], json["ports"]);
  EXPECT_EQ(askVolume(*pod, "/v1/self/env").body, env);
  EXPECT_EQ(askVolume(*pod, "/v1/self/ports/web").body, std::to_string(web) + "\n");
  struct stat socket {};
  ASSERT_EQ(::stat((targetOf(*pod) / agent::csi::kPodSocketFile).c_str(), &socket), 0);
  EXPECT_EQ(socket.st_mode & 0777, 0666u) << "a pod running as any user connects";
}

// What a container sees at its first start: podman (runc) starts it in the pod's netns with the
// volume's directory bind-mounted, as the kubelet has the runtime do once ADD is answered, and its
// entrypoint reads its port from ports.env, with no hostPath and no API call.
TEST_F(AgentCsiTest, AContainerReadsItsPortFromPortsEnvAtItsFirstStart) {
  Pod* pod = publishedPod("pod-a", "web=80, rtp=5000-5003/udp");
  ASSERT_NE(pod, nullptr);
  const uint16_t web = grantedPort(*pod, "web", PortProtocol::kTcp);
  const uint16_t rtp = grantedPort(*pod, "rtp", PortProtocol::kUdp, 4);
  TempDir work;
  ASSERT_OK_AND_ASSIGN(
      const auto ran, runCommand({.argv = {HOSTPORT_PODMAN_WORKLOAD, work.path(), pod->netns.path(),
                                           targetOf(*pod).string(),
                                           ". /hostport/ports.env && echo \"web=$HOSTPORT_WEB "
                                           "rtp=$HOSTPORT_RTP_FIRST..$HOSTPORT_RTP_LAST\""},
                                  .env = {{"PATH", "/usr/sbin:/usr/bin:/sbin:/bin"}},
                                  .timeout = std::chrono::seconds(150)}));
  ASSERT_TRUE(ran.ok()) << ran.describe();
  EXPECT_EQ(ran.out, "web=" + std::to_string(web) + " rtp=" + std::to_string(rtp) + ".." +
                         std::to_string(rtp + 3) + "\n");
}

TEST_F(AgentCsiTest, APodsVolumeNeverShowsAnotherPodsPorts) {
  Pod* a = publishedPod("pod-a", "web=80");
  ASSERT_NE(a, nullptr);
  Pod* b = publishedPod("pod-b", "admin=9000");
  ASSERT_NE(b, nullptr);
  const uint16_t webA = grantedPort(*a, "web", PortProtocol::kTcp);
  const uint16_t adminB = grantedPort(*b, "admin", PortProtocol::kTcp);
  EXPECT_EQ(readText(targetOf(*a) / agent::csi::kPortsEnvFile),
            "HOSTPORT_WEB=" + std::to_string(webA) + "\n");
  EXPECT_EQ(readText(targetOf(*b) / agent::csi::kPortsEnvFile),
            "HOSTPORT_ADMIN=" + std::to_string(adminB) + "\n");
  EXPECT_THAT(askVolume(*b, "/v1/self").body, ::testing::Not(HasSubstr("\"web\"")));

  // A process of pod B's cgroup that reaches pod A's volume socket is refused, not answered.
  ASSERT_OK_AND_ASSIGN(PodCgroup cgroupB, PodCgroup::create(b->uid, CgroupDriver::kSystemd));
  ASSERT_OK_AND_ASSIGN(PodCaller caller,
                       PodCaller::start(volumeSocket(*a), {.cgroupProcs = cgroupB.procsPath()}));
  ASSERT_OK_AND_ASSIGN(const auto refused, httpGet(caller.socket(), "/v1/self"));
  EXPECT_EQ(refused.status, 403u) << refused.body;
  EXPECT_THAT(refused.body, HasSubstr("unidentified_caller"));
  EXPECT_THAT(refused.body, ::testing::Not(HasSubstr(std::to_string(webA))));
}

TEST_F(AgentCsiTest, ARecreatedSandboxKeepsItsStickyPortInTheVolume) {
  Pod* pod = publishedPod("pod-a", "web=80");
  ASSERT_NE(pod, nullptr);
  const uint16_t web = grantedPort(*pod, "web", PortProtocol::kTcp);
  ASSERT_OK_AND_ASSIGN(const auto deleted, node().del(*pod));
  ASSERT_TRUE(deleted.ok()) << deleted.describe();
  // The runtime makes a new sandbox of the same pod: a new container id, the same UID.
  Pod* again = bridgedPod("pod-a2");
  ASSERT_NE(again, nullptr);
  again->uid = pod->uid;
  again->label = pod->label;
  ASSERT_OK_AND_ASSIGN(const auto added, node().add(*again, withAgent("web=80")));
  ASSERT_TRUE(added.ok()) << added.describe();
  EXPECT_EQ(grantedPort(*again, "web", PortProtocol::kTcp), web);
  EXPECT_EQ(readText(targetOf(*pod) / agent::csi::kPortsEnvFile),
            "HOSTPORT_WEB=" + std::to_string(web) + "\n");
}

TEST_F(AgentCsiTest, UnpublishRemovesTheFilesAndTheSocketAndARestartServesWhatIsPublished) {
  Pod* a = publishedPod("pod-a", "web=80");
  ASSERT_NE(a, nullptr);
  Pod* b = publishedPod("pod-b", "web=80");
  ASSERT_NE(b, nullptr);
  const uint16_t webB = grantedPort(*b, "web", PortProtocol::kTcp);
  const auto unpublished = kubelet_->unpublish(csiPod(*a), kVolume);
  ASSERT_TRUE(unpublished.ok()) << unpublished.error_message();
  EXPECT_FALSE(std::filesystem::exists(targetOf(*a)));
  EXPECT_TRUE(kubelet_->unpublish(csiPod(*a), kVolume).ok()) << "twice is success";

  ASSERT_OK(agent_->restart());
  EXPECT_TRUE(agent_->waitForLog("csi.restored volumes=1")) << agent_->describe();
  const HttpAnswer self = askVolume(*b, "/v1/self/ports/web");
  EXPECT_EQ(self.status, 200u) << self.body;
  EXPECT_EQ(self.body, std::to_string(webB) + "\n");
}

// An agent that was down, or a kubelet that lost track, leaves no unpublish: once the kubelet has
// removed the pod's directory, the sweep (every 10 s) forgets the volume and closes its socket.
TEST_F(AgentCsiTest, AVolumeTheKubeletRemovedWithNoUnpublishIsSwept) {
  Pod* a = publishedPod("pod-a", "web=80");
  ASSERT_NE(a, nullptr);
  ASSERT_OK_AND_ASSIGN(std::string metrics, client().getText("/metrics"));
  EXPECT_EQ(metricValue(metrics, "hostport_csi_volumes"), 1);
  EXPECT_EQ(metricValue(metrics, "hostport_csi_registered"), 1);
  EXPECT_EQ(
      metricValue(metrics, R"(hostport_csi_requests_total{method="NodePublishVolume",code="OK"})"),
      1);
  std::filesystem::remove_all(kubeletDir() / "pods" / a->uid);
  EXPECT_TRUE(agent_->waitForLog("csi.swept", std::chrono::seconds(25))) << agent_->describe();
  ASSERT_OK_AND_ASSIGN(metrics, client().getText("/metrics"));
  EXPECT_EQ(metricValue(metrics, "hostport_csi_volumes"), 0);
  EXPECT_TRUE(std::filesystem::is_empty(std::filesystem::path(agent_->stateDir()) / "csi-volumes"))
      << "its record is gone";
}

TEST_F(AgentCsiTest, ABadRequestIsRefusedWithTheCsiCodeAndLeavesNothing) {
  Pod* pod = bridgedPod("pod-a");
  ASSERT_NE(pod, nullptr);
  const FakeCsiPod csi = csiPod(*pod);
  const auto refuse = [&](csi::v1::NodePublishVolumeRequest request, grpc::StatusCode code,
                          const std::string& said) {
    csi::v1::NodePublishVolumeResponse response;
    const auto status =
        kubelet_->node().NodePublishVolume(csiCallContext().get(), request, &response);
    EXPECT_EQ(status.error_code(), code) << said << ": " << status.error_message();
    EXPECT_THAT(status.error_message(), HasSubstr(said));
  };
  auto noPodInfo = kubelet_->publishRequest(csi, kVolume);
  noPodInfo.mutable_volume_context()->erase("csi.storage.k8s.io/pod.uid");
  refuse(noPodInfo, grpc::StatusCode::INVALID_ARGUMENT, "csi.storage.k8s.io/pod.uid is missing");

  auto outside = kubelet_->publishRequest(csi, kVolume);
  outside.set_target_path((dir_ / "elsewhere" / "mount").string());
  refuse(outside, grpc::StatusCode::INVALID_ARGUMENT, "is not a CSI volume's directory");

  auto dotDot = kubelet_->publishRequest(csi, kVolume);
  dotDot.set_target_path(
      (kubeletDir() / "pods" / pod->uid / "volumes" / "kubernetes.io~csi" / ".." / ".." / "mount")
          .string());
  refuse(dotDot, grpc::StatusCode::INVALID_ARGUMENT, "has a component \"..\"");

  auto block = kubelet_->publishRequest(csi, kVolume);
  block.mutable_volume_capability()->mutable_block();
  refuse(block, grpc::StatusCode::INVALID_ARGUMENT, "not block devices");

  auto otherPod = kubelet_->publishRequest(csi, kVolume);
  (*otherPod.mutable_volume_context())["csi.storage.k8s.io/pod.uid"] = "another-uid";
  refuse(otherPod, grpc::StatusCode::INVALID_ARGUMENT, "volume_context names pod another-uid");

  EXPECT_FALSE(std::filesystem::exists(kubelet_->targetOf(csi, kVolume)));
  EXPECT_FALSE(std::filesystem::exists(dir_ / "elsewhere"));

  ASSERT_TRUE(kubelet_->publish(csi, kVolume).ok());
  auto moved = kubelet_->publishRequest(csi, "other");
  moved.set_volume_id(FakeKubeletCsi::volumeIdOf(csi, kVolume));
  refuse(moved, grpc::StatusCode::ALREADY_EXISTS, "is published at");
  EXPECT_TRUE(agent_->waitForLog("csi.refused method=NodePublishVolume code=ALREADY_EXISTS"))
      << agent_->describe();
}

}  // namespace
}  // namespace hostport::test
