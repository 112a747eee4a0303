// fake-kubelet-csi: the FAKE kubelet's CSI side of the tests (fake_kubelet_csi.h) as a command,
// for scripts/demo.sh and trials by hand on a machine without a kubelet. It is no kubelet: it
// makes a pod's volume directory and sends the calls a kubelet sends, over the driver's real
// gRPC sockets, and nothing else (no pods, no mounts, no containers).

#include <cstdio>
#include <string>
#include <string_view>

#include "tests/fakes/fake_kubelet_csi.h"

namespace {

constexpr std::string_view kUsage = R"(Usage: fake-kubelet-csi --kubelet-dir DIR COMMAND

A FAKE kubelet's CSI calls to the hostport.io driver of a hostport-agent started with
--csi-driver true --kubelet-dir DIR, as a kubelet rooted at DIR makes them:

  register                          the plugin watcher's handshake on
                                    DIR/plugins_registry/hostport.io-reg.sock: GetInfo, then
                                    NotifyRegistrationStatus(registered); prints the PluginInfo
  publish NAMESPACE/NAME UID [VOL]  makes DIR/pods/UID/volumes/kubernetes.io~csi/VOL/ (VOL:
                                    "hostport") and sends NodePublishVolume of the pod's inline
                                    volume, with its pod info; prints the target path
  unpublish NAMESPACE/NAME UID [VOL]  NodeUnpublishVolume, then removes the volume's directory

Exit codes: 0 done, 1 the driver refused (its gRPC code and message on stderr), 2 bad usage.
)";

int usageError(const std::string& message) {
  std::fprintf(stderr, "fake-kubelet-csi: error: %s\n%s", message.c_str(), kUsage.data());
  return 2;
}

int refused(std::string_view call, const grpc::Status& status) {
  std::fprintf(stderr, "fake-kubelet-csi: %.*s: gRPC code %d: %s\n", static_cast<int>(call.size()),
               call.data(), static_cast<int>(status.error_code()), status.error_message().c_str());
  return 1;
}

}  // namespace

int main(int argc, char** argv) {
  using hostport::test::FakeCsiPod;
  using hostport::test::FakeKubeletCsi;
  if (argc >= 2 && (std::string_view(argv[1]) == "-h" || std::string_view(argv[1]) == "--help")) {
    std::fputs(kUsage.data(), stdout);
    return 0;
  }
  if (argc < 4 || std::string_view(argv[1]) != "--kubelet-dir") {
    return usageError("expected --kubelet-dir DIR COMMAND");
  }
  const std::filesystem::path kubeletDir = argv[2];
  const std::string_view command = argv[3];
  FakeKubeletCsi kubelet(kubeletDir);
  if (command == "register") {
    if (argc != 4) return usageError("register takes no arguments");
    pluginregistration::PluginInfo info;
    const auto status =
        kubelet.registerPlugin(kubeletDir / "plugins_registry" / "hostport.io-reg.sock", &info);
    if (!status.ok()) return refused("register", status);
    std::printf("type=%s name=%s endpoint=%s versions=%s\n", info.type().c_str(),
                info.name().c_str(), info.endpoint().c_str(),
                info.supported_versions().empty() ? "" : info.supported_versions(0).c_str());
    return 0;
  }
  if (command != "publish" && command != "unpublish") {
    return usageError("unknown command \"" + std::string(command) + "\"");
  }
  if (argc != 6 && argc != 7) return usageError(std::string(command) + " NAMESPACE/NAME UID [VOL]");
  const std::string podName = argv[4];
  const auto slash = podName.find('/');
  if (slash == std::string::npos) return usageError("the pod is NAMESPACE/NAME");
  const FakeCsiPod pod{podName.substr(0, slash), podName.substr(slash + 1), argv[5]};
  const std::string volume = argc == 7 ? argv[6] : "hostport";
  kubelet.connect((kubeletDir / "plugins" / "hostport.io" / "csi.sock").string());
  if (command == "publish") {
    const auto status = kubelet.publish(pod, volume);
    if (!status.ok()) return refused("NodePublishVolume", status);
    std::printf("%s\n", kubelet.targetOf(pod, volume).c_str());
    return 0;
  }
  const auto status = kubelet.unpublish(pod, volume);
  if (!status.ok()) return refused("NodeUnpublishVolume", status);
  return 0;
}
