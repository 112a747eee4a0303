#include "agent/csi/csi_services.h"

#include "agent/csi/grpc_status.h"
#include "agent/csi/pod_volume.h"
#include "agent/log/event_log.h"

namespace hostport::agent::csi {
namespace {

using log::Component;
using log::Level;

grpc::Status invalid(const std::string& message) {
  return {grpc::StatusCode::INVALID_ARGUMENT, message};
}

/// What a published volume must be: a mounted directory (the driver has no block device), with
/// no staging (the driver reports no STAGE_UNSTAGE_VOLUME).
grpc::Status checkPublishShape(const ::csi::v1::NodePublishVolumeRequest& request) {
  if (!request.has_volume_capability()) return invalid("volume_capability is missing");
  if (!request.volume_capability().has_mount()) {
    return invalid("volume_capability: " + std::string(kDriverName) +
                   " volumes are mounted directories, not block devices");
  }
  if (!request.staging_target_path().empty()) {
    return invalid("staging_target_path: \"" + request.staging_target_path() + "\" is set, but " +
                   std::string(kDriverName) + " stages nothing (no STAGE_UNSTAGE_VOLUME)");
  }
  return grpc::Status::OK;
}

}  // namespace

grpc::Status CallCounts::count(std::string_view method, grpc::Status status) {
  const std::string code(statusName(status.error_code()));
  {
    std::lock_guard lock(mutex_);
    ++counts_[{std::string(method), code}];
  }
  if (!status.ok()) {
    log::event(Component::kCsi, Level::kWarn, "csi.refused",
               {{"method", method}, {"code", code}, {"cause", status.error_message()}});
  }
  return status;
}

void CallCounts::writeMetrics(prometheus::TextWriter& out) const {
  std::lock_guard lock(mutex_);
  out.family("hostport_csi_requests_total", prometheus::Type::kCounter,
             "CSI calls the hostport.io driver answered, by method and gRPC status code.");
  for (const auto& [key, value] : counts_) {
    out.sample("hostport_csi_requests_total", value, {{"method", key.first}, {"code", key.second}});
  }
}

grpc::Status IdentityService::GetPluginInfo(grpc::ServerContext*,
                                            const ::csi::v1::GetPluginInfoRequest*,
                                            ::csi::v1::GetPluginInfoResponse* response) {
  response->set_name(std::string(kDriverName));
  response->set_vendor_version(HOSTPORT_VERSION);
  return counts_.count("GetPluginInfo", grpc::Status::OK);
}

grpc::Status IdentityService::GetPluginCapabilities(grpc::ServerContext*,
                                                    const ::csi::v1::GetPluginCapabilitiesRequest*,
                                                    ::csi::v1::GetPluginCapabilitiesResponse*) {
  // No controller service and no topology: a node plugin alone, every node alike.
  return counts_.count("GetPluginCapabilities", grpc::Status::OK);
}

grpc::Status IdentityService::Probe(grpc::ServerContext*, const ::csi::v1::ProbeRequest*,
                                    ::csi::v1::ProbeResponse* response) {
  // The driver serves only once the agent has recovered its leases and restored its volumes.
  response->mutable_ready()->set_value(true);
  return counts_.count("Probe", grpc::Status::OK);
}

grpc::Status NodeService::NodePublishVolume(grpc::ServerContext*,
                                            const ::csi::v1::NodePublishVolumeRequest* request,
                                            ::csi::v1::NodePublishVolumeResponse*) {
  constexpr std::string_view kMethod = "NodePublishVolume";
  if (auto shape = checkPublishShape(*request); !shape.ok()) return counts_.count(kMethod, shape);
  const std::map<std::string, std::string> context(request->volume_context().begin(),
                                                   request->volume_context().end());
  auto volume = podVolumeOf(request->volume_id(), request->target_path(), context, kubeletDir_);
  if (!volume) return counts_.count(kMethod, toStatus(volume.error()));
  // A hostNetwork pod's ports come from the pod watch, not from an ADD: asked for now, they are in
  // the files at its first start too.
  if (await_) await_(volume->pod.uid);
  if (auto published = volumes_.publish(*volume); !published) {
    return counts_.count(kMethod, toStatus(published.error()));
  }
  return counts_.count(kMethod, grpc::Status::OK);
}

grpc::Status NodeService::NodeUnpublishVolume(grpc::ServerContext*,
                                              const ::csi::v1::NodeUnpublishVolumeRequest* request,
                                              ::csi::v1::NodeUnpublishVolumeResponse*) {
  constexpr std::string_view kMethod = "NodeUnpublishVolume";
  if (auto id = checkVolumeId(request->volume_id()); !id) {
    return counts_.count(kMethod, toStatus(id.error()));
  }
  auto target = parseTargetPath(request->target_path(), kubeletDir_);
  if (!target) return counts_.count(kMethod, toStatus(target.error()));
  if (auto unpublished = volumes_.unpublish(request->volume_id(), *target); !unpublished) {
    return counts_.count(kMethod, toStatus(unpublished.error()));
  }
  return counts_.count(kMethod, grpc::Status::OK);
}

grpc::Status NodeService::NodeGetCapabilities(grpc::ServerContext*,
                                              const ::csi::v1::NodeGetCapabilitiesRequest*,
                                              ::csi::v1::NodeGetCapabilitiesResponse*) {
  return counts_.count("NodeGetCapabilities", grpc::Status::OK);
}

grpc::Status NodeService::NodeGetInfo(grpc::ServerContext*, const ::csi::v1::NodeGetInfoRequest*,
                                      ::csi::v1::NodeGetInfoResponse* response) {
  response->set_node_id(nodeId_);
  return counts_.count("NodeGetInfo", grpc::Status::OK);
}

}  // namespace hostport::agent::csi
