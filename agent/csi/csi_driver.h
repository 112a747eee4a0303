#pragma once
// The hostport.io CSI driver as the agent runs it: the published volumes (pod_volumes.h), the CSI
// Identity and Node services on <kubeletDir>/plugins/hostport.io/csi.sock, the kubelet's plugin
// registration on <kubeletDir>/plugins_registry/hostport.io-reg.sock, and a sweep of what the
// kubelet removed without telling. docs/design.md, "Ports in a CSI volume".
//
// Started after the leases are recovered and the pod server serves, before the control socket:
// the kubelet finds the registration socket only once a publish can be answered.

#include <chrono>
#include <filesystem>
#include <memory>
#include <string>
#include <thread>

#include "agent/csi/pod_volumes.h"
#include "common/error.h"
#include "common/prometheus_text.h"

namespace hostport::agent::csi {

struct CsiDriverOptions {
  std::filesystem::path kubeletDir = "/var/lib/kubelet";
  std::filesystem::path stateDir;  // the volumes' records go in its csi-volumes/
  std::string nodeId;              // NodeGetInfo's: the node's name
  std::chrono::milliseconds sweepEvery{10'000};
};

/// <kubeletDir>/plugins/hostport.io/csi.sock: the CSI socket, which PluginInfo names.
std::filesystem::path csiSocketPath(const std::filesystem::path& kubeletDir);
/// <kubeletDir>/plugins_registry/hostport.io-reg.sock: where the kubelet looks for plugins.
std::filesystem::path registrationSocketPath(const std::filesystem::path& kubeletDir);

class CsiDriver {
 public:
  /// Restores the recorded volumes, then serves both sockets (mode 0600: the kubelet is root).
  /// kIo or kUnavailable naming the socket when one cannot be served.
  static Result<std::unique_ptr<CsiDriver>> start(PodLeases leases, ServeVolumeSocket serveSocket,
                                                  CsiDriverOptions options);
  /// Stops serving (calls under way finish), the sweep, and closes the volumes' sockets. Their
  /// files and records stay for the next agent.
  ~CsiDriver();
  CsiDriver(const CsiDriver&) = delete;
  CsiDriver& operator=(const CsiDriver&) = delete;

  /// A lease was granted or released (AgentService::watchLeases()).
  void leaseChanged(const Lease& lease);
  void writeMetrics(prometheus::TextWriter& out) const;

 private:
  struct Servers;
  CsiDriver(std::unique_ptr<PodVolumes> volumes, std::unique_ptr<Servers> servers);
  std::unique_ptr<PodVolumes> volumes_;
  std::unique_ptr<Servers> servers_;
  std::jthread sweeper_;
};

}  // namespace hostport::agent::csi
