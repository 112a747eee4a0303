#pragma once
// The hostport.io CSI driver as the agent runs it: the published volumes (pod_volumes.h), the CSI
// Identity and Node services on <kubeletDir>/plugins/hostport.io/csi.sock, the kubelet's plugin
// registration on <kubeletDir>/plugins_registry/hostport.io-reg.sock, and a sweep of what the
// kubelet removed without telling. docs/design.md, "Ports in a CSI volume".
//
// Opened after the leases are recovered and the pod server serves (the volumes taken up again,
// their files following grants from then on), and served once the pod watch runs, before the
// control socket: the kubelet finds the registration socket only once a publish can be answered.

#include <chrono>
#include <filesystem>
#include <functional>
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

/// Blocks until the leases the agent makes for the pod `podUid` on its own, if any, are made (a
/// hostNetwork pod's, which the pod watch asks for; HostNetworkPods::awaitLease()), or a bound
/// passes. Empty: there are none to wait for.
using AwaitPodLeases = std::function<void(const std::string& podUid)>;

class CsiDriver {
 public:
  /// Restores the recorded volumes: their sockets served, their files written from the leases,
  /// and from now on at each grant (leaseChanged()). Serves no gRPC yet.
  static std::unique_ptr<CsiDriver> open(PodLeases leases, ServeVolumeSocket serveSocket,
                                         CsiDriverOptions options);
  /// Serves both sockets (mode 0600: the kubelet is root) and starts the sweep. A publish first
  /// waits for `await`. kIo naming the socket when one cannot be served.
  Result<void> serve(AwaitPodLeases await);
  /// Stops serving gRPC (calls under way finish) and the sweep: no publish asks for a lease once
  /// this returns. The volumes stay, and their files still follow grants and releases.
  void stopServing();
  /// stopServing(), then closes the volumes' sockets. Their files and records stay for the next
  /// agent.
  ~CsiDriver();
  CsiDriver(const CsiDriver&) = delete;
  CsiDriver& operator=(const CsiDriver&) = delete;

  /// A lease was granted or released (AgentService::watchLeases()).
  void leaseChanged(const Lease& lease);
  void writeMetrics(prometheus::TextWriter& out) const;

 private:
  struct Servers;
  CsiDriver(std::unique_ptr<PodVolumes> volumes, CsiDriverOptions options);
  CsiDriverOptions options_;
  std::unique_ptr<PodVolumes> volumes_;
  std::unique_ptr<Servers> servers_;
  std::jthread sweeper_;
};

}  // namespace hostport::agent::csi
