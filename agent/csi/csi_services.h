#pragma once
// The CSI Identity and Node services of the hostport.io driver (csi.v1, agent/csi/proto/csi.proto):
// a node plugin of ephemeral inline volumes, with no controller service and no node capability
// (no staging, no stats, no expansion), so the kubelet calls NodePublishVolume and
// NodeUnpublishVolume directly. Each call is counted (hostport_csi_requests_total{method,code})
// and each refusal logged (csi.refused) with the gRPC code and the message the kubelet shows in
// the pod's events.

#include <filesystem>
#include <functional>
#include <map>
#include <mutex>
#include <string>
#include <string_view>

#include "agent/csi/pod_volumes.h"
#include "agent/csi/proto/csi.grpc.pb.h"
#include "common/prometheus_text.h"

namespace hostport::agent::csi {

/// The calls answered, by method and status code.
class CallCounts {
 public:
  /// Counts `status` for `method`, logs it when it is a refusal, and returns it.
  grpc::Status count(std::string_view method, grpc::Status status);
  void writeMetrics(prometheus::TextWriter& out) const;

 private:
  mutable std::mutex mutex_;
  std::map<std::pair<std::string, std::string>, uint64_t> counts_;
};

class IdentityService final : public ::csi::v1::Identity::Service {
 public:
  explicit IdentityService(CallCounts& counts) : counts_(counts) {}
  grpc::Status GetPluginInfo(grpc::ServerContext*, const ::csi::v1::GetPluginInfoRequest*,
                             ::csi::v1::GetPluginInfoResponse* response) override;
  grpc::Status GetPluginCapabilities(grpc::ServerContext*,
                                     const ::csi::v1::GetPluginCapabilitiesRequest*,
                                     ::csi::v1::GetPluginCapabilitiesResponse* response) override;
  grpc::Status Probe(grpc::ServerContext*, const ::csi::v1::ProbeRequest*,
                     ::csi::v1::ProbeResponse* response) override;

 private:
  CallCounts& counts_;
};

class NodeService final : public ::csi::v1::Node::Service {
 public:
  /// `kubeletDir`: where target paths must be (pod_volume.h); `nodeId`: NodeGetInfo's answer,
  /// the node's name; `await`: what a publish waits for first (csi_driver.h), or empty.
  NodeService(PodVolumes& volumes, CallCounts& counts, std::filesystem::path kubeletDir,
              std::string nodeId, std::function<void(const std::string&)> await)
      : volumes_(volumes),
        counts_(counts),
        kubeletDir_(std::move(kubeletDir)),
        nodeId_(std::move(nodeId)),
        await_(std::move(await)) {}
  grpc::Status NodePublishVolume(grpc::ServerContext*,
                                 const ::csi::v1::NodePublishVolumeRequest* request,
                                 ::csi::v1::NodePublishVolumeResponse*) override;
  grpc::Status NodeUnpublishVolume(grpc::ServerContext*,
                                   const ::csi::v1::NodeUnpublishVolumeRequest* request,
                                   ::csi::v1::NodeUnpublishVolumeResponse*) override;
  grpc::Status NodeGetCapabilities(grpc::ServerContext*,
                                   const ::csi::v1::NodeGetCapabilitiesRequest*,
                                   ::csi::v1::NodeGetCapabilitiesResponse*) override;
  grpc::Status NodeGetInfo(grpc::ServerContext*, const ::csi::v1::NodeGetInfoRequest*,
                           ::csi::v1::NodeGetInfoResponse* response) override;

 private:
  PodVolumes& volumes_;
  CallCounts& counts_;
  std::filesystem::path kubeletDir_;
  std::string nodeId_;
  std::function<void(const std::string&)> await_;
};

}  // namespace hostport::agent::csi
