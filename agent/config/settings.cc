#include "agent/config/settings.h"

#include <array>

namespace hostport::agent::config {
namespace {

constexpr uint32_t kDay = 86400;

constexpr std::array<std::string_view, 3> kChainWords = {"auto", "true", "false"};

void setChain(std::string_view word, AgentConfig& config) {
  config.chainCni = *parseChainCni(word);  // one of kChainWords, which it reads
}

std::string_view chainWord(const AgentConfig& config) {
  switch (config.chainCni) {
    case ChainCni::kOn:
      return "true";
    case ChainCni::kOff:
      return "false";
    case ChainCni::kAuto:
      break;
  }
  return "auto";
}

// clang-format off
const std::array kSettings = {
  Setting{"stateDir", "--state-dir",
          "where the lease journal and snapshot live",
          Text{&AgentConfig::stateDir}},
  Setting{"socket", "--socket",
          "control socket path, mode 0600",
          Text{&AgentConfig::socketPath}},
  Setting{"podSocket", "--pod-socket",
          "where pods ask for their own ports (GET /v1/self), mode 0666, alone in its directory, "
          "which pods mount read-only; \"\" turns it off",
          Text{&AgentConfig::podSocketPath}},
  Setting{"metricsAddress", "--metrics-address",
          "host:port where GET /metrics alone is served over TCP, e.g. 0.0.0.0:9810 or "
          "[::1]:9810; \"\" turns it off",
          Text{&AgentConfig::metricsAddress}},
  Setting{"logLevel", "--log-level",
          "trace, debug, info, warn or error",
          Text{&AgentConfig::logLevel}},
  Setting{"logFormat", "--log-format",
          "text (key=value events) or json (one object per line)",
          Text{&AgentConfig::logFormat}},
  Setting{"reserveLocalPorts", "--reserve-local-ports",
          "add the pools' ranges to net.ipv4.ip_local_reserved_ports, so no local program is "
          "given one of their ports as its ephemeral port",
          Switch{&AgentConfig::reserveLocalPorts}},
  Setting{"procSysNet", "--proc-sys-net",
          "the directory of the net sysctls the agent writes (ip_local_reserved_ports, "
          "route_localnet): the node's /proc/sys/net mounted read-write elsewhere, e.g. "
          "/host/proc/sys/net, when /proc/sys is read-only in the container",
          Text{&AgentConfig::procSysNet}},
  Setting{"compactAfterJournalBytes", "--compact-after-journal-bytes",
          "journal size at which the leases are written into a new snapshot",
          Count64{&AgentConfig::compactAfterJournalBytes, 4096, uint64_t{1} << 40}},
  Setting{"tableRepairSeconds", "--table-repair-interval",
          "seconds between the reconciler's full passes (table ip/ip6 hostport against the "
          "leases: layout, missing forwards, stray elements), a backstop to the table's change "
          "events; 0: no reconciler",
          Count32{&AgentConfig::tableRepairSeconds, 0, kDay}},
  Setting{"vanishedGraceSeconds", "--vanished-grace",
          "seconds a lease's sandbox netns must stay gone before the lease is released",
          Count32{&AgentConfig::vanishedGraceSeconds, 0, kDay}},
  Setting{"releaseSpool", "--release-spool",
          "where the plugin leaves release notes for DELs made while the agent was down",
          Text{&AgentConfig::releaseSpool}},
  Setting{"allowEmptyGc", "--allow-empty-gc",
          "let a CNI GC with an empty list of valid attachments release every lease of its "
          "network (refused while the network holds more than emptyGcMaxLeases leases: a "
          "runtime that lost its state must not wipe the node)",
          Switch{&AgentConfig::allowEmptyGc}},
  Setting{"emptyGcMaxLeases", "--empty-gc-max-leases",
          "the most leases a network may hold for a CNI GC with an empty list to go ahead",
          Count64{&AgentConfig::emptyGcMaxLeases, 0, 1'000'000}},
  Setting{"chainCni", "--chain-cni",
          "chain the hostport plugin into the node's CNI configuration and keep it there: auto "
          "(only when running in a pod, KUBERNETES_SERVICE_HOST set), true or false; undo with "
          "`hostportctl uninstall-cni`",
          Choice{kChainWords, &setChain, &chainWord}},
  Setting{"cniConfDir", "--cni-conf-dir",
          "the runtime's CNI configuration dir",
          Text{&AgentConfig::cniConfDir}},
  Setting{"cniBinDir", "--cni-bin-dir",
          "where the runtime finds the hostport plugin; not chained before it is there",
          Text{&AgentConfig::cniBinDir}},
  Setting{"replacePortmap", "--replace-portmap",
          "true: hostport takes portmap's place in the chain; false: portmap keeps static "
          "hostPorts and hostport serves annotation ports only",
          Switch{&AgentConfig::replacePortmap}},
  Setting{"kubeconfig", "--kubeconfig",
          "kubeconfig of the cluster to publish pods' ports and the node's capacity to (empty: "
          "the in-cluster config when running in a pod; neither: no publication)",
          Text{&AgentConfig::kubeconfig}},
  Setting{"nodeName", "--node-name",
          "this node's name in the cluster (empty: env NODE_NAME, which the DaemonSet sets from "
          "spec.nodeName)",
          Text{&AgentConfig::nodeName}},
  Setting{"apiQps", "--kube-api-qps",
          "API requests per second at most, as client-go's --kube-api-qps",
          Count32{&AgentConfig::apiQps, 1, 1000}},
  Setting{"apiBurst", "--kube-api-burst",
          "API requests in a burst at most, as client-go's --kube-api-burst",
          Count32{&AgentConfig::apiBurst, 1, 10000}},
  Setting{"capacitySeconds", "--capacity-interval",
          "seconds between counts of the pools' capacity for the Node's extended resources; 0: "
          "never",
          Count32{&AgentConfig::capacitySeconds, 0, kDay}},
  Setting{"publishSettleMs", "--publish-settle-ms",
          "milliseconds a pod's publication waits after its latest grant, so the interfaces one "
          "sandbox setup grants are published in one patch",
          Count32{&AgentConfig::publishSettleMs, 0, 60'000}},
  Setting{"watchPods", "--watch-pods",
          "list and watch this node's pods in the cluster (needs pods list and watch in the "
          "agent's RBAC); never on the ADD path, which works with the API server down",
          Switch{&AgentConfig::watchPods}},
  Setting{"csiDriver", "--csi-driver",
          "serve the hostport.io CSI driver: a pod's ephemeral csi volume holds ports.json, "
          "ports.env and its own pod.sock before its containers start (needs the kubelet's "
          "plugins, plugins_registry and pods directories mounted)",
          Switch{&AgentConfig::csiDriver}},
  Setting{"kubeletDir", "--kubelet-dir",
          "the kubelet's root directory: the CSI sockets go in its plugins/hostport.io and "
          "plugins_registry, and volumes only in its pods/<uid>/volumes",
          Text{&AgentConfig::kubeletDir}},
};
// clang-format on

}  // namespace

std::span<const Setting> settings() { return kSettings; }

const Setting* findSetting(std::string_view key) { return settings::findSetting(settings(), key); }

}  // namespace hostport::agent::config
