#include "tests/fakes/fake_kubelet_csi.h"

#include <grpcpp/grpcpp.h>

#include <chrono>
#include <fstream>
#include <functional>
#include <sstream>

namespace hostport::test {

std::unique_ptr<grpc::ClientContext> csiCallContext(int seconds) {
  auto context = std::make_unique<grpc::ClientContext>();
  context->set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(seconds));
  return context;
}

FakeKubeletCsi::FakeKubeletCsi(std::filesystem::path kubeletDir)
    : kubeletDir_(std::move(kubeletDir)) {
  std::filesystem::create_directories(kubeletDir_ / "plugins_registry");
}

grpc::Status FakeKubeletCsi::registerPlugin(const std::filesystem::path& registrationSocket,
                                            pluginregistration::PluginInfo* info) {
  auto channel = grpc::CreateChannel("unix:" + registrationSocket.string(),
                                     grpc::InsecureChannelCredentials());
  auto registration = pluginregistration::Registration::NewStub(channel);
  if (auto asked = registration->GetInfo(csiCallContext().get(), {}, info); !asked.ok()) {
    return asked;
  }
  pluginregistration::RegistrationStatus status;
  status.set_plugin_registered(true);
  pluginregistration::RegistrationStatusResponse response;
  return registration->NotifyRegistrationStatus(csiCallContext().get(), status, &response);
}

void FakeKubeletCsi::connect(const std::string& endpoint) {
  auto channel = grpc::CreateChannel("unix:" + endpoint, grpc::InsecureChannelCredentials());
  node_ = csi::v1::Node::NewStub(channel);
  identity_ = csi::v1::Identity::NewStub(channel);
}

std::string FakeKubeletCsi::volumeIdOf(const FakeCsiPod& pod, const std::string& volume) {
  std::ostringstream id;
  id << "csi-" << std::hex << std::hash<std::string>{}(pod.uid + "/" + volume);
  return id.str();
}

std::filesystem::path FakeKubeletCsi::targetOf(const FakeCsiPod& pod,
                                               const std::string& volume) const {
  return kubeletDir_ / "pods" / pod.uid / "volumes" / "kubernetes.io~csi" / volume / "mount";
}

csi::v1::NodePublishVolumeRequest FakeKubeletCsi::publishRequest(const FakeCsiPod& pod,
                                                                 const std::string& volume) {
  const std::filesystem::path target = targetOf(pod, volume);
  std::filesystem::create_directories(target.parent_path());
  std::ofstream(target.parent_path() / "vol_data.json")
      << R"({"driverName":"hostport.io","volumeHandle":")" << volumeIdOf(pod, volume)
      << R"(","volumeLifecycleMode":"Ephemeral"})";
  csi::v1::NodePublishVolumeRequest request;
  request.set_volume_id(volumeIdOf(pod, volume));
  request.set_target_path(target.string());
  request.mutable_volume_capability()->mutable_mount();
  request.mutable_volume_capability()->mutable_access_mode()->set_mode(
      csi::v1::VolumeCapability::AccessMode::SINGLE_NODE_WRITER);
  request.set_readonly(true);
  auto& context = *request.mutable_volume_context();
  context["csi.storage.k8s.io/pod.name"] = pod.name;
  context["csi.storage.k8s.io/pod.namespace"] = pod.namespaceName;
  context["csi.storage.k8s.io/pod.uid"] = pod.uid;
  context["csi.storage.k8s.io/serviceAccount.name"] = "default";
  context["csi.storage.k8s.io/ephemeral"] = "true";
  return request;
}

grpc::Status FakeKubeletCsi::publish(const FakeCsiPod& pod, const std::string& volume) {
  csi::v1::NodePublishVolumeResponse response;
  return node_->NodePublishVolume(csiCallContext().get(), publishRequest(pod, volume), &response);
}

grpc::Status FakeKubeletCsi::unpublish(const FakeCsiPod& pod, const std::string& volume) {
  csi::v1::NodeUnpublishVolumeRequest request;
  request.set_volume_id(volumeIdOf(pod, volume));
  request.set_target_path(targetOf(pod, volume).string());
  csi::v1::NodeUnpublishVolumeResponse response;
  auto status = node_->NodeUnpublishVolume(csiCallContext().get(), request, &response);
  if (status.ok()) std::filesystem::remove_all(targetOf(pod, volume).parent_path());
  return status;
}

}  // namespace hostport::test
