#include "agent/csi/registration_service.h"

#include "agent/csi/pod_volume.h"
#include "agent/log/event_log.h"

namespace hostport::agent::csi {

using log::Component;
using log::Level;

grpc::Status RegistrationService::GetInfo(grpc::ServerContext*,
                                          const ::pluginregistration::InfoRequest*,
                                          ::pluginregistration::PluginInfo* info) {
  info->set_type("CSIPlugin");
  info->set_name(std::string(kDriverName));
  info->set_endpoint(endpoint_);
  info->add_supported_versions(std::string(kCsiVersion));
  log::event(Component::kCsi, Level::kDebug, "csi.registration_asked", {{"endpoint", endpoint_}});
  return grpc::Status::OK;
}

grpc::Status RegistrationService::NotifyRegistrationStatus(
    grpc::ServerContext*, const ::pluginregistration::RegistrationStatus* status,
    ::pluginregistration::RegistrationStatusResponse*) {
  registered_ = status->plugin_registered();
  if (status->plugin_registered()) {
    log::event(Component::kCsi, Level::kInfo, "csi.registered",
               {{"driver", kDriverName}, {"endpoint", endpoint_}});
  } else {
    log::event(Component::kCsi, Level::kError, "csi.registration_failed",
               {{"driver", kDriverName}, {"cause", status->error()}});
  }
  return grpc::Status::OK;
}

void RegistrationService::writeMetrics(prometheus::TextWriter& out) const {
  out.family("hostport_csi_registered", prometheus::Type::kGauge,
             "1 once the kubelet registered the hostport.io CSI driver.");
  out.sample("hostport_csi_registered", static_cast<uint64_t>(registered_ ? 1 : 0));
}

}  // namespace hostport::agent::csi
