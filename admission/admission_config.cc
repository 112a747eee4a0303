#include "admission/admission_config.h"

#include <array>

#include "agent/config/agent_config.h"
#include "agent/log/event_log.h"
#include "common/identifiers.h"
#include "common/quote.h"

namespace hostport::admission {
namespace {

using Text = settings::Text<AdmissionConfig>;
using Switch = settings::Switch<AdmissionConfig>;
using Count32 = settings::Count32<AdmissionConfig>;

constexpr uint32_t kDay = 86400;

// clang-format off
const std::array kSettings = {
  Setting{"config", "--config,-c",
          "the agents' config file (agent.yaml, the ConfigMap the DaemonSet mounts): the pools "
          "requests are judged against, read by the agent's own reader",
          Text{&AdmissionConfig::agentConfigPath}},
  Setting{"kubeconfig", "--kubeconfig",
          "kubeconfig of the cluster (empty: the in-cluster config)",
          Text{&AdmissionConfig::kubeconfig}},
  Setting{"namespace", "--namespace",
          "the namespace of the server's Service and Secret",
          Text{&AdmissionConfig::namespaceName}},
  Setting{"service", "--service",
          "the Service the API server calls the webhooks through; the serving certificate names "
          "<service>.<namespace>.svc",
          Text{&AdmissionConfig::service}},
  Setting{"secret", "--secret",
          "the Secret holding the CA and the serving certificate (ca.crt, ca.key, tls.crt, "
          "tls.key), shared by the replicas",
          Text{&AdmissionConfig::secret}},
  Setting{"validatingConfiguration", "--validating-configuration",
          "the ValidatingWebhookConfiguration whose caBundle the server keeps",
          Text{&AdmissionConfig::validatingConfiguration}},
  Setting{"mutatingConfiguration", "--mutating-configuration",
          "the MutatingWebhookConfiguration whose caBundle the server keeps",
          Text{&AdmissionConfig::mutatingConfiguration}},
  Setting{"listen", "--listen",
          "host:port of the webhook endpoints over TLS (POST /validate, POST /mutate, POST /claim "
          "with cluster pools, GET /healthz, GET /readyz)",
          Text{&AdmissionConfig::listen}},
  Setting{"metricsAddress", "--metrics-address",
          "host:port where GET /metrics alone is served over plain HTTP; \"\" turns it off",
          Text{&AdmissionConfig::metricsAddress}},
  Setting{"tlsCertFile", "--tls-cert-file",
          "the serving certificate (PEM, with its chain) from this file instead of the server's "
          "own: with cert-manager, its Secret mounted, and its CA injector keeping the "
          "caBundle; the server then makes no certificate and writes nothing to the API",
          Text{&AdmissionConfig::tlsCertFile}},
  Setting{"tlsKeyFile", "--tls-key-file",
          "the serving certificate's private key (PEM), with --tls-cert-file",
          Text{&AdmissionConfig::tlsKeyFile}},
  Setting{"certificateCheckSeconds", "--certificate-check-interval",
          "seconds between looks at the certificate: the Secret (renewing what is due), or the "
          "files",
          Count32{&AdmissionConfig::certificateCheckSeconds, 10, 7 * kDay}},
  Setting{"resourceRequests", "--resource-requests",
          "add the hostport.io/<pool> extended-resource requests to pods; turn off when the "
          "agents publish no capacity on their Node, or such pods never schedule",
          Switch{&AdmissionConfig::resourceRequests}},
  Setting{"maxConnections", "--max-connections",
          "open connections at most; more are closed at once",
          Count32{&AdmissionConfig::maxConnections, 1, 65536}},
  Setting{"threads", "--threads",
          "threads serving requests (0: one per core)",
          Count32{&AdmissionConfig::threads, 0, 256}},
  Setting{"logLevel", "--log-level",
          "trace, debug, info, warn or error",
          Text{&AdmissionConfig::logLevel}},
  Setting{"logFormat", "--log-format",
          "text (key=value events) or json (one object per line)",
          Text{&AdmissionConfig::logFormat}},
  Setting{"apiQps", "--kube-api-qps",
          "API requests per second at most, as client-go's --kube-api-qps",
          Count32{&AdmissionConfig::apiQps, 1, 1000}},
  Setting{"apiBurst", "--kube-api-burst",
          "API requests in a burst at most, as client-go's --kube-api-burst",
          Count32{&AdmissionConfig::apiBurst, 1, 10000}},
  Setting{"claimApiQps", "--claim-api-qps",
          "API requests per second at most for claiming cluster pools' ports (a create per port, "
          "while the pod's review waits), apart from --kube-api-qps; for each serving thread",
          Count32{&AdmissionConfig::claimApiQps, 1, 100000}},
  Setting{"claimApiBurst", "--claim-api-burst",
          "API requests in a burst at most for claiming cluster pools' ports",
          Count32{&AdmissionConfig::claimApiBurst, 1, 100000}},
  Setting{"claimGraceSeconds", "--claim-grace",
          "seconds a cluster pool's claim whose pod is gone waits before its release, seen so in "
          "three passes of the repair loop (a StatefulSet's ordinal below its replicas keeps its "
          "claim)",
          Count32{&AdmissionConfig::claimGraceSeconds, 3, 7 * kDay}},
  Setting{"leaderLeaseSeconds", "--leader-lease",
          "seconds the repair loop's leader Lease lasts unrenewed before another replica takes "
          "over (renewed every seventh of it)",
          Count32{&AdmissionConfig::leaderLeaseSeconds, 2, 3600}},
};
// clang-format on

std::unexpected<Error> invalid(std::string_view flag, const std::string& value,
                               std::string_view problem) {
  return fail(ErrorCode::kInvalidArgument,
              std::string(flag) + ": " + quoteText(value) + " " + std::string(problem));
}

/// The pools of the agents' file, as an agent started with `--config path` alone would have them.
Result<std::vector<agent::core::PoolSpec>> readPools(const std::string& path) {
  agent::config::CommandLine agentFlags;
  agentFlags.configPath = path;
  HOSTPORT_TRY(auto agents, agent::config::resolveConfig(agentFlags));
  return std::move(agents.pools);
}

}  // namespace

std::span<const Setting> admissionSettings() { return kSettings; }

Result<ResolvedAdmissionConfig> resolveAdmissionConfig(const settings::FlagValues& flags) {
  ResolvedAdmissionConfig resolved;
  AdmissionConfig& config = resolved.settings;
  HOSTPORT_TRY_VOID(settings::applyFlags(admissionSettings(), flags, config));
  for (const auto& [flag, value] :
       {std::pair{"--namespace", &config.namespaceName}, {"--service", &config.service}}) {
    if (const Problem problem = dnsLabelProblem(*value)) return invalid(flag, *value, *problem);
  }
  for (const auto& [flag, value] : {std::pair{"--secret", &config.secret},
                                    {"--validating-configuration", &config.validatingConfiguration},
                                    {"--mutating-configuration", &config.mutatingConfiguration}}) {
    if (const Problem problem = dnsSubdomainProblem(*value)) return invalid(flag, *value, *problem);
  }
  for (const auto& [flag, path] : {std::pair{"--kubeconfig", &config.kubeconfig},
                                   {"--tls-cert-file", &config.tlsCertFile},
                                   {"--tls-key-file", &config.tlsKeyFile}}) {
    if (!path->empty() && path->front() != '/')
      return invalid(flag, *path, "must be an absolute path");
  }
  if (config.tlsCertFile.empty() != config.tlsKeyFile.empty()) {
    return fail(ErrorCode::kInvalidArgument,
                "--tls-cert-file and --tls-key-file go together: give both, or neither (the "
                "server then keeps its own certificate in the Secret)");
  }
  if (auto level = agent::log::parseLevel(config.logLevel); !level) {
    return withContext(level.error(), "--log-level");
  }
  if (auto format = agent::log::parseFormat(config.logFormat); !format) {
    return withContext(format.error(), "--log-format");
  }
  auto listen = agent::config::parseListenAddress(config.listen);
  if (!listen) return withContext(listen.error(), "--listen");
  resolved.listen = *listen;
  if (!config.metricsAddress.empty()) {
    auto metrics = agent::config::parseListenAddress(config.metricsAddress);
    if (!metrics) return withContext(metrics.error(), "--metrics-address");
    resolved.metrics = *metrics;
  }
  HOSTPORT_TRY(resolved.pools, readPools(config.agentConfigPath));
  return resolved;
}

}  // namespace hostport::admission
