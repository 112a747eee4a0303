#pragma once
// hostport-admission's settings, one table (settings/setting.h) like the agent's: each a flag with
// its help and default. The pools are not among them: --config names the agents' own file
// (agent.yaml, the ConfigMap both mount), read by the agent's reader, so the server judges with
// exactly the pools the nodes will.

#include <CLI/CLI.hpp>
#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "agent/config/listen_address.h"
#include "agent/core/pool_spec.h"
#include "common/error.h"
#include "settings/setting.h"

namespace hostport::admission {

struct AdmissionConfig {
  std::string agentConfigPath = "/etc/hostport/agent.yaml";
  std::string kubeconfig;  // empty: the in-cluster config
  std::string namespaceName = "hostport";
  std::string service = "hostport-admission";
  std::string secret = "hostport-admission-tls";
  std::string validatingConfiguration = "hostport-admission";
  std::string mutatingConfiguration = "hostport-admission";
  std::string listen = "0.0.0.0:8443";
  std::string metricsAddress = "0.0.0.0:9811";
  /// The serving certificate and key from these files (a cert-manager Secret, mounted), read
  /// again every check interval; both empty: the server keeps its own in the Secret.
  std::string tlsCertFile;
  std::string tlsKeyFile;
  uint32_t certificateCheckSeconds = 12 * 3600;
  bool resourceRequests = true;
  uint32_t maxConnections = 512;
  uint32_t threads = 0;  // 0: one per core
  std::string logLevel = "info";
  std::string logFormat = "text";
  uint32_t apiQps = 5;
  uint32_t apiBurst = 10;
  /// The claims of cluster pools (admission/cluster_claimer.h) are one create per port on the
  /// admission path: paced apart from the certificate keeper's few requests.
  uint32_t claimApiQps = 200;
  uint32_t claimApiBurst = 400;
  /// A claim whose pod is gone is released after this long, seen so in three passes.
  uint32_t claimGraceSeconds = 300;
  /// The repair loop's leader Lease: a leader that stops renewing is replaced after this long.
  uint32_t leaderLeaseSeconds = 15;
};

using Setting = settings::Setting<AdmissionConfig>;

/// The table, in the order --help lists it.
std::span<const Setting> admissionSettings();

/// What resolveAdmissionConfig() gives: the settings checked, the addresses parsed, and the
/// pools of the agents' file.
struct ResolvedAdmissionConfig {
  AdmissionConfig settings;
  agent::config::ListenAddress listen;
  std::optional<agent::config::ListenAddress> metrics;  // none: no metrics listener
  std::vector<agent::core::PoolSpec> pools;
};

/// The flags over the defaults, checked, and the agents' file read. kInvalidArgument naming the
/// flag (`--listen: "8443" ...`) or the file and key (`agent.yaml: pools.games.ranges[0]: ...`).
Result<ResolvedAdmissionConfig> resolveAdmissionConfig(const settings::FlagValues& flags);

}  // namespace hostport::admission
