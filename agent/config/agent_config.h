#pragma once
// The agent's configuration: a YAML file (--config) with flags on top. Unknown keys are errors,
// so a typo fails at start instead of silently meaning the default.

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "agent/api/node_files.h"
#include "agent/api/pod_codec.h"
#include "agent/api/routes.h"
#include "agent/core/allocator.h"
#include "common/error.h"
#include "settings/setting.h"

namespace hostport::agent::config {

inline constexpr std::string_view kDefaultStateDir = "/var/lib/hostport";
inline constexpr std::string_view kDefaultPortRange = "30000-32767";
inline constexpr uint32_t kDefaultTableRepairSeconds = 30;
inline constexpr uint32_t kDefaultVanishedGraceSeconds = 10;
inline constexpr std::string_view kDefaultCniConfDir = "/etc/cni/net.d";
inline constexpr std::string_view kDefaultCniBinDir = "/opt/cni/bin";
inline constexpr std::string_view kDefaultKubeletDir = "/var/lib/kubelet";
/// hostnet::kDefaultProcSysNet (config does not depend on hostnet; a unit test keeps them equal).
inline constexpr std::string_view kDefaultProcSysNet = "/proc/sys/net";

/// Whether the agent chains the plugin into the node's CNI configuration (agent/cni_config).
enum class ChainCni {
  kAuto,  // only in a pod (KUBERNETES_SERVICE_HOST is set): an agent started by hand, a test or
          // the demo never edits the machine's /etc/cni/net.d
  kOn,
  kOff,
};
/// "auto", "true" or "false"; kInvalidArgument quoting the text otherwise.
Result<ChainCni> parseChainCni(std::string_view text);
/// On the node's loopback only: metrics leave the node only when the operator says so.
inline constexpr std::string_view kDefaultMetricsAddress = "127.0.0.1:9810";

struct AgentConfig {
  std::string stateDir = std::string(kDefaultStateDir);
  std::string socketPath = std::string(api::kDefaultAgentSocket);
  /// The pod socket (agent/api/pod_codec.h), mode 0666, alone in its directory, which pods mount;
  /// empty: not served. Never in (or above) the control socket's directory.
  std::string podSocketPath = std::string(api::kDefaultPodSocket);
  bool reserveLocalPorts = true;  // add pool ranges to net.ipv4.ip_local_reserved_ports
  /// Where the agent reads and writes net sysctls (ip_local_reserved_ports, route_localnet): the
  /// node's /proc/sys/net mounted read-write elsewhere when /proc/sys is read-only (a container
  /// without `privileged`; hostnet/proc_sys_net.h).
  std::string procSysNet = std::string(kDefaultProcSysNet);
  std::string logLevel = "info";
  std::string logFormat = "text";  // text or json (agent/log/event_log.h)
  uint64_t compactAfterJournalBytes = 8 << 20;
  /// How often the reconciler compares table ip/ip6 hostport with the leases and repairs it, as a
  /// backstop to the table's change events; 0: no reconciler (the agent still installs and
  /// removes its leases' forwards, but never checks or repairs the table).
  uint32_t tableRepairSeconds = kDefaultTableRepairSeconds;
  /// How long a lease's sandbox netns must stay gone before the reconciler releases the lease.
  uint32_t vanishedGraceSeconds = kDefaultVanishedGraceSeconds;
  /// Where the plugin leaves release notes for DELs made while the agent was down.
  std::string releaseSpool = std::string(api::kDefaultReleaseSpool);
  /// CNI GC with an empty valid list: refused while the network holds more leases than
  /// emptyGcMaxLeases, unless allowEmptyGc (agent_service.h).
  bool allowEmptyGc = false;
  uint64_t emptyGcMaxLeases = 0;
  /// Where GET /metrics is served over TCP, and nothing else (listen_address.h's grammar); empty:
  /// no TCP listener. The control endpoints stay on the Unix socket.
  std::string metricsAddress = std::string(kDefaultMetricsAddress);
  std::vector<core::PoolSpec> pools;  // always holds "default" once resolved
  ChainCni chainCni = ChainCni::kAuto;
  std::string cniConfDir = std::string(kDefaultCniConfDir);
  std::string cniBinDir = std::string(kDefaultCniBinDir);  // where the runtime finds `hostport`
  /// true: hostport takes portmap's place in the chain; false: portmap keeps the static hostPorts
  /// and hostport follows it for annotation ports only (`"staticPorts": false`).
  bool replacePortmap = true;
  /// The cluster (issue 13): a kubeconfig file, or empty for the in-cluster config when the agent
  /// runs in a pod; neither: no publication. The Node is nodeName, or env NODE_NAME when empty.
  std::string kubeconfig;
  std::string nodeName;
  uint32_t apiQps = 5;  // client-side limit of API requests, as client-go's --kube-api-qps
  uint32_t apiBurst = 10;
  /// How often the pools' capacity is counted for the Node's extended resources; 0: never.
  uint32_t capacitySeconds = 10;
  /// How long a pod's publication waits after its latest grant (publish/publisher.h).
  uint32_t publishSettleMs = 250;
  /// Watch this node's pods (issue 25): list and watch them (fieldSelector spec.nodeName), never
  /// on the ADD path. Off: the agent knows a pod only from its CNI requests.
  bool watchPods = true;
  /// Serve the hostport.io CSI driver (issue 26, agent/csi): pods' ephemeral volumes that hold
  /// their ports at their first start. Off by default for an agent started by hand; the DaemonSet
  /// turns it on.
  bool csiDriver = false;
  /// The kubelet's root directory: the CSI and registration sockets go under it, and a volume's
  /// target path must be in one of its pods' directories.
  std::string kubeletDir = std::string(kDefaultKubeletDir);
};

/// This node's name: nodeName, or env NODE_NAME when it is empty; empty when neither says.
std::string nodeNameOf(const AgentConfig& config);

/// chainCni resolved: kAuto is on only when `inCluster` (the agent runs in a pod).
bool chainsCni(const AgentConfig& config, bool inCluster);

/// What hostport-agent's flags set on top of the file (command_line.h registers them).
struct CommandLine {
  std::string configPath;  // --config
  std::string portRange;   // --port-range: the default pool's ranges
  /// Each setting given as a flag, by its YAML key (settings.h), as the flag's text: "" is a
  /// value too (--metrics-address "" turns the listener off). A setting not here, or here
  /// without a value, keeps the file's value or the default.
  settings::FlagValues settings;
};

/// The file at commandLine.configPath (when one is named), the flags on top, finalized. Errors
/// name the flag or the file and key.
Result<AgentConfig> resolveConfig(const CommandLine& commandLine);

/// The flags (--port-range and the settings) over `config`, unfinalized; errors name the flag.
Result<void> applyCommandLine(const CommandLine& commandLine, AgentConfig& config);

/// Parses YAML text into `config`, keeping what the text does not set. `source` names the file in
/// errors. Errors are kInvalidArgument naming the key path and the value:
/// `config.yaml: pools.games.strategy: "fastest" is not one of lowest, random, round-robin`.
Result<void> applyYamlConfig(std::string_view text, std::string_view source, AgentConfig& config);

/// "30000-31000,32000-32767" as ranges; errors name the text.
Result<std::vector<PortRange>> parsePortRanges(std::string_view text);

/// Sets the default pool's ranges (creating the pool when absent): --port-range.
void setDefaultPoolRanges(AgentConfig& config, std::vector<PortRange> ranges);

/// Fills in the default pool when none was configured, then checks the whole configuration the
/// way the allocator will (overlaps, sizes) so errors surface at start with their key.
Result<void> finalizeConfig(AgentConfig& config);

}  // namespace hostport::agent::config
