#pragma once
// The kubelet's plugin registration (pluginregistration.Registration, agent/csi/proto/
// plugin_registration.proto), served by the agent itself on a socket in the kubelet's
// plugins_registry directory, where a CSI driver usually runs the node-driver-registrar sidecar:
// GetInfo names the driver, its CSI socket and the versions it serves; the kubelet then reports
// whether it registered the driver (csi.registered, or csi.registration_failed with the kubelet's
// error), and hostport_csi_registered says so.

#include <atomic>
#include <string>

#include "agent/csi/proto/plugin_registration.grpc.pb.h"
#include "common/prometheus_text.h"

namespace hostport::agent::csi {

class RegistrationService final : public ::pluginregistration::Registration::Service {
 public:
  /// `endpoint`: the CSI socket's path as the kubelet reaches it.
  explicit RegistrationService(std::string endpoint) : endpoint_(std::move(endpoint)) {}

  grpc::Status GetInfo(grpc::ServerContext*, const ::pluginregistration::InfoRequest*,
                       ::pluginregistration::PluginInfo* info) override;
  grpc::Status NotifyRegistrationStatus(grpc::ServerContext*,
                                        const ::pluginregistration::RegistrationStatus* status,
                                        ::pluginregistration::RegistrationStatusResponse*) override;

  /// hostport_csi_registered: 1 once the kubelet said it registered the driver.
  void writeMetrics(prometheus::TextWriter& out) const;

 private:
  std::string endpoint_;
  std::atomic<bool> registered_{false};
};

}  // namespace hostport::agent::csi
