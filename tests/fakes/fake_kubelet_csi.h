#pragma once
// A fake of the kubelet's side of CSI, for the tests of the agent's hostport.io driver: what the
// kubelet's plugin watcher and its CSI volume plugin send, over the real sockets and the real
// gRPC wire (the generated csi.v1 and pluginregistration stubs), so that the driver cannot tell.
// It lays out the kubelet's directories as the kubelet does before it asks: a pod's
// pods/<uid>/volumes/kubernetes.io~csi/<volume>/ with vol_data.json, and tears them down after.

#include <filesystem>
#include <map>
#include <memory>
#include <string>

#include "agent/csi/proto/csi.grpc.pb.h"
#include "agent/csi/proto/plugin_registration.grpc.pb.h"

namespace hostport::test {

struct FakeCsiPod {
  std::string namespaceName;
  std::string name;
  std::string uid;
};

class FakeKubeletCsi {
 public:
  /// A kubelet rooted at `kubeletDir`, whose plugins_registry it makes.
  explicit FakeKubeletCsi(std::filesystem::path kubeletDir);

  /// The plugin watcher's handshake with a socket found in plugins_registry: GetInfo, then
  /// NotifyRegistrationStatus(registered). The PluginInfo, or the failed call's status.
  grpc::Status registerPlugin(const std::filesystem::path& registrationSocket,
                              pluginregistration::PluginInfo* info);

  /// The CSI calls, on the endpoint the registration named.
  void connect(const std::string& endpoint);
  csi::v1::Node::Stub& node() { return *node_; }
  csi::v1::Identity::Stub& identity() { return *identity_; }

  /// The target path of `pod`'s volume `volume`, as the kubelet names it.
  std::filesystem::path targetOf(const FakeCsiPod& pod, const std::string& volume) const;
  /// What the kubelet sends for an inline volume of `pod` with podInfoOnMount: its request, the
  /// volume's directory made (as the kubelet makes it before it asks).
  csi::v1::NodePublishVolumeRequest publishRequest(const FakeCsiPod& pod,
                                                   const std::string& volume);
  /// publishRequest(), sent.
  grpc::Status publish(const FakeCsiPod& pod, const std::string& volume);
  /// NodeUnpublishVolume of `pod`'s `volume`, then the kubelet's own cleanup of its directory.
  grpc::Status unpublish(const FakeCsiPod& pod, const std::string& volume);

  /// The volume id the kubelet gives an inline volume ("csi-" and a hash of pod and volume).
  static std::string volumeIdOf(const FakeCsiPod& pod, const std::string& volume);

 private:
  std::filesystem::path kubeletDir_;
  std::unique_ptr<csi::v1::Node::Stub> node_;
  std::unique_ptr<csi::v1::Identity::Stub> identity_;
};

/// A context with a deadline of `seconds`, as the kubelet sets one on each call.
std::unique_ptr<grpc::ClientContext> csiCallContext(int seconds = 10);

}  // namespace hostport::test
