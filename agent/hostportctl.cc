// hostportctl: the operator's view of this node's leases, over the agent's control socket.

#include <CLI/CLI.hpp>
#include <algorithm>
#include <cstdio>
#include <iostream>
#include <string>
#include <thread>
#include <vector>

#include "admission/port_claim.h"
#include "agent/api/agent_client.h"
#include "agent/api/agent_probe.h"
#include "agent/api/http_errors.h"
#include "agent/api/json_codec.h"
#include "agent/api/pod_codec.h"
#include "agent/api/unix_http_exchange.h"
#include "agent/cni_config/chain_files.h"
#include "agent/cni_config/plugin_install.h"
#include "agent/config/agent_config.h"
#include "kube/cluster_config.h"
#include "kube/kube_client.h"

namespace {

using namespace hostport;
using namespace hostport::agent;

std::string portsColumn(const Lease& lease) {
  std::string out;
  for (const auto& grant : lease.ports) {
    if (!out.empty()) out += ", ";
    if (!grant.name.empty()) out += grant.name + "=";
    out += grant.str();
    if (grant.isStatic) out += " (static)";
  }
  return out.empty() ? "-" : out;
}

void printTable(const std::vector<std::vector<std::string>>& rows) {
  std::vector<std::size_t> widths;
  for (const auto& row : rows) {
    widths.resize(std::max(widths.size(), row.size()));
    for (std::size_t i = 0; i < row.size(); ++i) widths[i] = std::max(widths[i], row[i].size());
  }
  for (const auto& row : rows) {
    std::string line;
    for (std::size_t i = 0; i < row.size(); ++i) {
      line += row[i];
      if (i + 1 < row.size()) line += std::string(widths[i] - row[i].size() + 2, ' ');
    }
    std::cout << line << "\n";
  }
}

void printLeases(const std::vector<Lease>& leases, bool json) {
  if (json) {
    std::cout << api::dumpBody(api::leaseListBody("leases", leases)) << "\n";
    return;
  }
  std::vector<std::vector<std::string>> rows = {
      {"NAMESPACE", "POD", "CONTAINER", "IFACE", "POOL", "PORTS"}};
  for (const auto& lease : leases) {
    rows.push_back({lease.pod.namespaceName.empty() ? "-" : lease.pod.namespaceName,
                    lease.pod.name.empty() ? "-" : lease.pod.name,
                    // A hostNetwork pod has no container of its own: its key names the pod.
                    lease.key.hostNetworkPodUid().empty() ? lease.key.containerId.substr(0, 12)
                                                          : std::string("(hostNetwork)"),
                    lease.key.ifname, lease.pool.empty() ? "-" : lease.pool, portsColumn(lease)});
  }
  printTable(rows);
}

/// `uninstall-cni`: reads the record and the conf dir only, so it works with the agent stopped.
int uninstallCni(const std::string& confDir, const std::string& binDir,
                 const std::string& stateDir) {
  auto undone = cni_config::unchain({confDir, stateDir});
  if (!undone) {
    std::cerr << "hostportctl: uninstall-cni: " << undone.error().message << "\n";
    return 1;
  }
  if (!undone->file) {
    std::cout << "hostport is not chained in " << confDir << ": nothing to undo\n";
  } else {
    std::cout << "hostport taken out of " << undone->file->string()
              << (undone->restoredConf ? " (the original .conf restored)" : "")
              << (undone->restoredPortmap ? " (portmap back at its place)" : "") << "\n";
  }
  std::cout << "left " << binDir << "/hostport in place: pods set up through it still need it "
            << "for their DEL; remove it once `hostportctl list` shows no lease. Stop the "
            << "agent first (or run it with --chain-cni false), or it chains the plugin again.\n";
  return 0;
}

int installPlugin(const std::string& from, const std::string& binDir) {
  // A VERSION that takes longer than this on a node is a plugin that will time out pods too.
  constexpr std::chrono::seconds kVersionDeadline{10};
  auto installed = cni_config::installPlugin(from, binDir, kVersionDeadline);
  if (!installed) {
    std::cerr << "hostportctl: install-plugin: " << installed.error().message << "\n";
    return 1;
  }
  std::cout << "installed " << installed->path.string() << ": VERSION " << installed->version
            << "\n";
  return 0;
}

/// `self`: the pod socket's answer for the calling process's own pod, as it comes (JSON, one port
/// as text, or with `env` the env file). For a container image that holds hostportctl, instead of
/// curl.
int askSelf(const std::string& podSocket, const std::string& portName, bool env,
            unsigned waitSeconds) {
  constexpr std::chrono::seconds kAnswerDeadline{5};  // on top of the wait the agent may take
  const std::optional<std::chrono::seconds> wait =
      waitSeconds > 0 ? std::optional(std::chrono::seconds(waitSeconds)) : std::nullopt;
  const std::string target = env ? api::selfEnvTarget(wait) : api::selfTarget(portName, wait);
  auto response = api::exchangeOverUnixSocket(
      podSocket, {.method = "GET", .target = target, .contentType = {}, .body = {}},
      std::chrono::seconds(waitSeconds) + kAnswerDeadline, 1 << 20);
  if (!response) {
    std::cerr << "hostportctl: " << response.error().message << "\n";
    return 3;
  }
  if (response->status != 200) {
    std::cerr << "hostportctl: GET " << target << " answered " << response->status << ": "
              << api::errorFromBody(response->status, response->body).message << "\n";
    return 1;
  }
  std::cout << response->body;
  // The env file is printed as it is: empty when the pod has no named port.
  if (!env && !response->body.ends_with('\n')) std::cout << "\n";
  return 0;
}

int report(const Error& error) {
  std::cerr << "hostportctl: " << error.message << "\n";
  return error.code == ErrorCode::kUnavailable ? 3 : 1;
}

/// The pools, then, for each pool with rules, what each namespace holds against the quotas.
void printPools(const std::vector<api::PoolUsageRow>& rows) {
  const auto quota = [](const std::optional<uint32_t>& limit) {
    return limit ? std::to_string(*limit) : std::string("-");
  };
  std::vector<std::vector<std::string>> table = {
      {"POOL", "STRATEGY", "RANGES", "SIZE", "USED", "FREE", "NAMESPACES", "PER-NS", "PER-POD"}};
  std::vector<std::vector<std::string>> usage = {{"POOL", "NAMESPACE", "USED", "QUOTA"}};
  for (const auto& row : rows) {
    std::string ranges;
    for (const auto& range : row.ranges) ranges += (ranges.empty() ? "" : ",") + range.str();
    std::string namespaces;
    for (const auto& pattern : row.namespaces)
      namespaces += (namespaces.empty() ? "" : ",") + pattern;
    table.push_back({row.name, row.strategy, ranges, std::to_string(row.size),
                     std::to_string(row.used), std::to_string(row.free),
                     namespaces.empty() ? "*" : namespaces, quota(row.maxPortsPerNamespace),
                     quota(row.maxPortsPerPod)});
    const bool ruled = !row.namespaces.empty() || row.maxPortsPerNamespace || row.maxPortsPerPod;
    if (!ruled) continue;
    for (const auto& entry : row.namespaceUsage) {
      usage.push_back({row.name, entry.name.empty() ? "-" : entry.name, std::to_string(entry.used),
                       quota(row.maxPortsPerNamespace)});
    }
  }
  printTable(table);
  if (usage.size() > 1) {
    std::cout << "\n";
    printTable(usage);
  }
}

/// The cluster pools of the agents' file, each with the claims the API server holds (issue 27).
int showClusterPools(const std::string& configPath, const std::string& kubeconfig,
                     const std::string& namespaceName, bool json) {
  config::CommandLine agentFlags;
  agentFlags.configPath = configPath;
  auto agents = config::resolveConfig(agentFlags);
  if (!agents) return report(agents.error());
  auto cluster = kube::findCluster(kubeconfig, &std::getenv);
  if (!cluster) return report(cluster.error());
  if (!*cluster) {
    std::cerr << "hostportctl: no --kubeconfig, and not running in a pod\n";
    return 2;
  }
  auto client =
      kube::KubeClient::create(**cluster, {}, [](kube::KubeClient::Clock::time_point until) {
        std::this_thread::sleep_until(until);
        return true;
      });
  if (!client) return report(client.error());
  auto claims = admission::listClaims(**client, namespaceName);
  if (!claims) return report(claims.error());
  const auto pools = admission::clusterPoolClaims(agents->pools, std::move(*claims));
  if (json) {
    std::cout << admission::clusterPoolClaimsJson(pools).dump(2) << "\n";
    return 0;
  }
  std::vector<std::vector<std::string>> summary = {{"POOL", "SIZE", "CLAIMED", "FREE"}};
  std::vector<std::vector<std::string>> held = {{"POOL", "PORT", "HOLDER", "ENTRY"}};
  for (const auto& pool : pools) {
    summary.push_back({pool.pool, std::to_string(pool.size), std::to_string(pool.claimed()),
                       std::to_string(pool.free())});
    for (const auto& claim : pool.claims) {
      const std::string entry = claim.count == 1
                                    ? claim.entry
                                    : claim.entry + " (" + std::to_string(claim.first) + "+" +
                                          std::to_string(claim.count) + ")";
      held.push_back({pool.pool, std::to_string(claim.port), claim.holder, entry});
    }
  }
  printTable(summary);
  if (held.size() > 1) {
    std::cout << "\n";
    printTable(held);
  }
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"hostportctl: list and manage this node's host-port leases through hostport-agent.",
               "hostportctl"};
  app.require_subcommand(1);
  std::string socket(api::kDefaultAgentSocket);
  double timeoutSeconds = 10;
  bool json = false;
  app.add_option("--socket", socket, "the agent's control socket")->capture_default_str();
  app.add_option("--timeout", timeoutSeconds, "seconds to wait for the agent")
      ->capture_default_str();

  auto* list = app.add_subcommand("list", "list leases (a table; --json for JSON)");
  std::string namespaceFilter, podFilter;
  list->add_option("-n,--namespace", namespaceFilter, "only this namespace");
  list->add_option("--pod", podFilter, "only this pod name");
  list->add_flag("--json", json, "print JSON");

  auto* get = app.add_subcommand("get", "show the leases of one pod");
  std::string podRef;
  get->add_option("pod", podRef, "<namespace>/<pod>")->required();
  get->add_flag("--json", json, "print JSON");

  auto* pools = app.add_subcommand(
      "pools",
      "show pools and their usage (this node's, from the agent); with --cluster, the cluster "
      "pools' claims, from the API server");
  pools->add_flag("--json", json, "print JSON");
  bool cluster = false;
  std::string agentConfig = "/etc/hostport/agent.yaml", kubeconfig,
              claimsNamespace = "hostport-system";
  pools->add_flag("--cluster", cluster,
                  "the cluster pools (scope: cluster) with each claim: port, holder, entry");
  pools->add_option("--config", agentConfig, "with --cluster: the agents' agent.yaml (the pools)")
      ->capture_default_str();
  pools->add_option("--kubeconfig", kubeconfig, "with --cluster: the cluster (empty: in-cluster)");
  pools
      ->add_option("--claims-namespace", claimsNamespace,
                   "with --cluster: the namespace of hostport-admission and its claim Leases")
      ->capture_default_str();

  auto* release = app.add_subcommand("release", "release every lease of a container");
  std::string containerId;
  release->add_option("containerID", containerId, "the container (sandbox) ID")->required();

  auto* uninstall = app.add_subcommand(
      "uninstall-cni",
      "take hostport out of the node's CNI configuration as the agent recorded it (a replaced "
      "portmap back at its index, a converted .conf back); works without the agent");
  std::string cniConfDir = "/etc/cni/net.d", cniBinDir = "/opt/cni/bin",
              stateDir = "/var/lib/hostport";
  uninstall->add_option("--cni-conf-dir", cniConfDir, "the runtime's CNI configuration dir")
      ->capture_default_str();
  uninstall->add_option("--cni-bin-dir", cniBinDir, "where the plugin binary is (left in place)")
      ->capture_default_str();
  uninstall->add_option("--state-dir", stateDir, "the agent's state dir (holds the record)")
      ->capture_default_str();

  auto* install = app.add_subcommand(
      "install-plugin",
      "copy the plugin binary into the CNI bin dir atomically and check that it runs (CNI "
      "VERSION); the DaemonSet's init container; works without the agent");
  std::string pluginSource = "/opt/hostport/bin/hostport";
  install->add_option("--from", pluginSource, "the plugin binary to install")
      ->capture_default_str();
  install->add_option("--cni-bin-dir", cniBinDir, "where the runtime looks for plugins")
      ->capture_default_str();

  // The kubelet's exec probes (daemonset.yaml): exit 0 on 200, else the reason in one line.
  auto* health = app.add_subcommand("health", "exit 0 when the agent's /healthz answers 200");
  auto* ready = app.add_subcommand("ready", "exit 0 when the agent's /readyz answers 200");

  auto* self = app.add_subcommand(
      "self",
      "inside a pod: the pod's own ports from the agent's pod socket (JSON; with a port name, "
      "that port's number alone; with --env, HOSTPORT_<NAME>=<port> lines); exit 1 when the "
      "agent refuses (no lease for this pod)");
  std::string podSocket(api::kDefaultPodSocket), portName;
  unsigned waitSeconds = 0;
  bool selfEnv = false;
  self->add_option("--socket", podSocket,
                   "the pod socket, as mounted in the pod (the hostport.io CSI volume's pod.sock, "
                   "or the hostPath one)")
      ->capture_default_str();
  self->add_flag("--env", selfEnv,
                 "print the env file (the CSI volume's ports.env): HOSTPORT_<NAME>=<port>, a "
                 "range as first-last with _FIRST and _LAST; for a shell's `.` or fileKeyRef");
  self->add_option("--wait", waitSeconds, "seconds to wait for the pod's lease (at most 60)")
      ->check(CLI::Range(0, static_cast<int>(api::kMaxPodWait.count())));
  auto* portOption = self->add_option("port", portName,
                                      "a port's name in hostport.io/ports: print its number only");
  portOption->excludes(self->get_option("--env"));

  CLI11_PARSE(app, argc, argv);
  if (*self) return askSelf(podSocket, portName, selfEnv, waitSeconds);
  if (*uninstall) return uninstallCni(cniConfDir, cniBinDir, stateDir);
  if (*install) return installPlugin(pluginSource, cniBinDir);
  if (*health || *ready) {
    // A probe's deadline is short unless --timeout says otherwise: the kubelet's own is seconds.
    constexpr double kProbeTimeoutSeconds = 2;
    if (app.get_option("--timeout")->count() == 0) timeoutSeconds = kProbeTimeoutSeconds;
  }
  const auto client = api::AgentClient::forSocket(
      socket, std::chrono::milliseconds(static_cast<int64_t>(timeoutSeconds * 1000)));

  if (*list) {
    auto leases = client.list(namespaceFilter, podFilter);
    if (!leases) return report(leases.error());
    printLeases(*leases, json);
  } else if (*get) {
    const auto slash = podRef.find('/');
    if (slash == std::string::npos || slash == 0 || slash + 1 == podRef.size()) {
      std::cerr << "hostportctl: get wants <namespace>/<pod>, not \"" << podRef << "\"\n";
      return 2;
    }
    auto leases = client.list(podRef.substr(0, slash), podRef.substr(slash + 1));
    if (!leases) return report(leases.error());
    if (leases->empty()) {
      std::cerr << "hostportctl: no lease for pod " << podRef << "\n";
      return 1;
    }
    printLeases(*leases, json);
  } else if (*pools && cluster) {
    return showClusterPools(agentConfig, kubeconfig, claimsNamespace, json);
  } else if (*pools) {
    auto rows = client.poolUsage();
    if (!rows) return report(rows.error());
    if (json) {
      std::cout << api::dumpBody(api::poolsBody(*rows)) << "\n";
      return 0;
    }
    printPools(*rows);
  } else if (*health || *ready) {
    auto probed = api::probeAgent(client, *health ? api::kHealthzPath : api::kReadyzPath);
    if (!probed) return report(probed.error());
  } else if (*release) {
    auto released = client.releaseContainer(containerId);
    if (!released) return report(released.error());
    std::cout << "released " << released->size() << " lease(s) of " << containerId << "\n";
  }
  return 0;
}
