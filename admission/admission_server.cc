#include "admission/admission_server.h"

#include <unistd.h>

#include <algorithm>
#include <boost/asio/signal_set.hpp>
#include <cstdio>
#include <cstdlib>
#include <random>

#include "agent/log/event_log.h"
#include "common/atomic_file.h"
#include "common/prometheus_text.h"
#include "kube/cluster_config.h"

namespace hostport::admission {
namespace {

namespace log = agent::log;
using Clock = std::chrono::steady_clock;

constexpr std::chrono::seconds kRetryAfterFailure{30};

Result<kube::ClusterConfig> clusterOf(const AdmissionConfig& config) {
  HOSTPORT_TRY(auto found, kube::findCluster(config.kubeconfig, &std::getenv));
  if (!found) {
    return fail(ErrorCode::kInvalidArgument,
                "no --kubeconfig, and not running in a pod (KUBERNETES_SERVICE_HOST is unset)");
  }
  return std::move(*found);
}

/// 16 hex digits from the system's random source: a nameless pod's claim holder.
HolderToken randomHolderToken() {
  return [] {
    static thread_local std::mt19937_64 random(std::random_device{}());
    char text[17];
    std::snprintf(text, sizeof text, "%016llx", static_cast<unsigned long long>(random()));
    return std::string(text);
  };
}

/// This replica's holderIdentity for the leader Lease: its pod's name (POD_NAME, from the downward
/// API) or host name, and a random suffix, as client-go's leader election makes one.
std::string replicaIdentity() {
  const char* pod = std::getenv("POD_NAME");
  std::string identity;
  if (pod != nullptr && *pod != '\0') {
    identity = pod;
  } else {
    char host[256] = {};
    identity = gethostname(host, sizeof host - 1) == 0 ? host : "hostport-admission";
  }
  return identity + "_" + randomHolderToken()();
}

}  // namespace

Result<void> AdmissionServer::startClaimer(const kube::ClusterConfig& cluster) {
  const AdmissionConfig& settings = config_.settings;
  const auto wait = [this](auto until) { return waitUntil(until); };
  // A review waits for its claims, and the API server waits for the review at most its
  // webhook's timeoutSeconds: a claim retries briefly, then the pod is refused and its creator
  // (a controller, kubectl) tries again.
  auto claimOptions = kube::KubeClientOptions::paced(settings.claimApiQps, settings.claimApiBurst);
  claimOptions.timeout = std::chrono::milliseconds(2000);
  claimOptions.maxAttempts = 3;
  claimOptions.backoff = {std::chrono::milliseconds(20), std::chrono::milliseconds(200), 2.0};
  // One client per serving thread: a claim blocks its thread on the API, and a client serves one
  // thread at a time.
  std::vector<std::unique_ptr<kube::KubeClient>> clients;
  for (unsigned i = 0; i < servingThreads(); ++i) {
    HOSTPORT_TRY(auto client, kube::KubeClient::create(cluster, claimOptions, wait));
    clients.push_back(std::move(client));
  }
  // The watch and the repair loop each hold a client of their own, paced as the keeper's.
  const auto paced = kube::KubeClientOptions::paced(settings.apiQps, settings.apiBurst);
  HOSTPORT_TRY(auto watchClient, kube::KubeClient::create(cluster, paced, wait));
  claimer_ = std::make_unique<ClusterClaimer>(
      std::move(clients), std::move(watchClient), config_.pools,
      ClaimerOptions{.namespaceName = settings.namespaceName}, [](const kube::InformerNote& note) {
        if (note.kind == kube::InformerNote::Kind::kFailed) {
          log::event(log::Component::kAdmission, log::Level::kWarn, "admission.claims_watch_failed",
                     {{"cause", note.cause}, {"retry_ms", note.retryIn.count()}});
        } else if (note.kind == kube::InformerNote::Kind::kListed) {
          log::event(log::Component::kAdmission, log::Level::kInfo, "admission.claims_listed",
                     {{"claims", note.count}, {"resource_version", note.resourceVersion}});
        }
      });
  HOSTPORT_TRY(auto repairClient, kube::KubeClient::create(cluster, paced, wait));
  RepairOptions repairOptions;
  repairOptions.namespaceName = settings.namespaceName;
  repairOptions.identity = replicaIdentity();
  repairOptions.grace = std::chrono::seconds(settings.claimGraceSeconds);
  repairOptions.leaseDuration = std::chrono::seconds(settings.leaderLeaseSeconds);
  repairOptions.retryPeriod = std::chrono::milliseconds(settings.leaderLeaseSeconds * 1000 / 7);
  repair_ = std::make_unique<ClaimRepair>(std::move(repairClient), std::move(repairOptions));
  return {};
}

AdmissionServer::AdmissionServer(ResolvedAdmissionConfig config) : config_(std::move(config)) {}

AdmissionServer::~AdmissionServer() {
  stop();
  if (certificateThread_.joinable()) certificateThread_.join();
}

bool AdmissionServer::waitUntil(Clock::time_point until) {
  std::unique_lock lock(mutex_);
  wake_.wait_until(lock, until, [this] { return stopped_; });
  return !stopped_;
}

void AdmissionServer::stop() {
  {
    std::lock_guard lock(mutex_);
    stopped_ = true;
  }
  wake_.notify_all();
  io_.stop();
}

std::optional<tls::PemCertificate> AdmissionServer::fetchCertificate() {
  auto serving = keeper_ ? keepCertificates() : readCertificateFiles();
  if (!serving) return std::nullopt;
  if (auto facts = tls::readCertificate(serving->certificatePem)) {
    metrics_.certificate(facts->notAfter);
  }
  return serving;
}

std::optional<tls::PemCertificate> AdmissionServer::keepCertificates() {
  auto pass = keeper_->pass();
  if (!pass) {
    metrics_.certificateFailure();
    log::event(log::Component::kAdmission, log::Level::kWarn, "admission.certificate_failed",
               {{"cause", pass.error().message}, {"retry_s", kRetryAfterFailure.count()}});
    return std::nullopt;
  }
  if (pass->wroteSecret) metrics_.renewed();
  if (pass->verdict.renewal != Renewal::kNone || pass->patchedConfigurations > 0) {
    log::event(log::Component::kAdmission, log::Level::kInfo, "admission.certificates_kept",
               {{"renewal", pass->verdict.renewal == Renewal::kAll       ? "ca_and_serving"
                            : pass->verdict.renewal == Renewal::kServing ? "serving"
                                                                         : "none"},
                {"reason", pass->verdict.reason},
                {"wrote_secret", pass->wroteSecret},
                {"patched_configurations", pass->patchedConfigurations}});
  }
  return std::move(pass->certificates.serving);
}

std::optional<tls::PemCertificate> AdmissionServer::readCertificateFiles() {
  constexpr std::size_t kMaxPemBytes = 1 << 20;
  tls::PemCertificate serving;
  for (const auto& [path, pem] :
       {std::pair{&config_.settings.tlsCertFile, &serving.certificatePem},
        std::pair{&config_.settings.tlsKeyFile, &serving.privateKeyPem}}) {
    auto text = readSmallFile(*path, kMaxPemBytes);
    if (!text || !*text) {
      metrics_.certificateFailure();
      log::event(log::Component::kAdmission, log::Level::kWarn, "admission.certificate_failed",
                 {{"cause", text ? "cannot read " + *path + ": missing" : text.error().message},
                  {"retry_s", kRetryAfterFailure.count()}});
      return std::nullopt;
    }
    *pem = std::move(**text);
  }
  return serving;
}

void AdmissionServer::watchCertificates(tls::PemCertificate serving) {
  const std::chrono::seconds period(config_.settings.certificateCheckSeconds);
  certificateThread_ = std::jthread([this, serving = std::move(serving), period]() mutable {
    auto next = Clock::now() + period;
    while (waitUntil(next)) {
      auto fetched = fetchCertificate();
      next = Clock::now() + (fetched ? period : std::chrono::seconds(kRetryAfterFailure));
      if (!fetched || *fetched == serving) continue;
      auto identity =
          agent::server::TlsIdentity::fromPem(fetched->certificatePem, fetched->privateKeyPem);
      if (!identity) {
        log::event(log::Component::kAdmission, log::Level::kError, "admission.certificate_unusable",
                   {{"cause", identity.error().message}});
        continue;
      }
      webhookServer_->setIdentity(std::move(*identity));
      serving = std::move(*fetched);
      log::event(log::Component::kAdmission, log::Level::kInfo, "admission.certificate_served", {});
    }
  });
}

Result<std::unique_ptr<AdmissionServer>> AdmissionServer::start(ResolvedAdmissionConfig config) {
  std::unique_ptr<AdmissionServer> server(new AdmissionServer(std::move(config)));
  const AdmissionConfig& settings = server->config_.settings;
  HOSTPORT_TRY(auto judge,
               agent::core::Allocator::create(server->config_.pools, [] { return uint64_t{0}; }));
  server->judge_ = std::make_unique<agent::core::Allocator>(std::move(judge));
  const bool clusterPools =
      std::ranges::any_of(server->config_.pools, [](const agent::core::PoolSpec& pool) {
        return pool.scope == agent::core::PoolScope::kCluster;
      });
  // The keeper needs the cluster, and so do cluster pools' claims, with cert-manager's files too.
  std::optional<kube::ClusterConfig> cluster;
  if (settings.tlsCertFile.empty() || clusterPools) {
    HOSTPORT_TRY(cluster, clusterOf(settings));
  }
  if (settings.tlsCertFile.empty()) {
    const auto clientOptions = kube::KubeClientOptions::paced(settings.apiQps, settings.apiBurst);
    HOSTPORT_TRY(server->client_, kube::KubeClient::create(*cluster, clientOptions,
                                                           [raw = server.get()](auto until) {
                                                             return raw->waitUntil(until);
                                                           }));
    server->keeper_ = std::make_unique<CertificateKeeper>(
        *server->client_,
        CertificateSite{settings.namespaceName, settings.secret, settings.service,
                        settings.validatingConfiguration, settings.mutatingConfiguration});
  }

  if (clusterPools) {
    HOSTPORT_TRY_VOID(server->startClaimer(*cluster));
  }

  std::optional<tls::PemCertificate> serving;
  while (!(serving = server->fetchCertificate())) {
    if (!server->waitUntil(Clock::now() + kRetryAfterFailure)) {
      return fail(ErrorCode::kUnavailable, "stopped before the first certificate");
    }
  }
  HOSTPORT_TRY(auto identity, agent::server::TlsIdentity::fromPem(serving->certificatePem,
                                                                  serving->privateKeyPem));

  server->webhooks_ =
      std::make_unique<Webhooks>(Webhooks{*server->judge_,
                                          {.resourceRequests = settings.resourceRequests},
                                          server->metrics_,
                                          server->claimer_.get(),
                                          randomHolderToken()});
  addWebhookRoutes(server->webhookRouter_, *server->webhooks_);
  agent::server::ServerLimits limits;
  limits.maxBodyBytes = kMaxReviewBytes;
  limits.maxConnections = settings.maxConnections;
  // kube-apiserver waits timeoutSeconds (2) for an answer: a client slower than that to send a
  // review is not the API server.
  limits.readTimeout = std::chrono::seconds(5);
  HOSTPORT_TRY(server->webhookServer_,
               agent::server::TlsHttpServer::listen(
                   server->io_, server->config_.listen.address, server->config_.listen.port,
                   server->webhookRouter_, limits, std::move(identity)));
  if (server->config_.metrics) {
    server->metricsRouter_.add(
        "GET", "/metrics",
        [raw = server.get()](const agent::server::HttpRequest&, const agent::server::PathParams&,
                             agent::server::Responder respond) {
          prometheus::TextWriter out;
          raw->metrics_.write(out);
          if (raw->client_) raw->client_->writeMetrics(out);  // none with certificate files
          if (raw->claimer_) raw->claimer_->writeMetrics(out);
          if (raw->repair_) raw->repair_->writeMetrics(out);
          respond({200, "text/plain; version=0.0.4", out.text()});
        });
    HOSTPORT_TRY(server->metricsServer_,
                 agent::server::TcpHttpServer::listen(server->io_, server->config_.metrics->address,
                                                      server->config_.metrics->port,
                                                      server->metricsRouter_, {}));
  }
  server->watchCertificates(std::move(*serving));
  log::event(log::Component::kAdmission, log::Level::kInfo, "admission.started",
             {{"listen", server->config_.listen.str()},
              {"pools", server->config_.pools.size()},
              {"certificates", settings.tlsCertFile.empty() ? "secret" : "files"},
              {"claims", server->claimer_ ? "cluster_pools" : "none"},
              {"resource_requests", settings.resourceRequests}});
  return server;
}

int AdmissionServer::serve() {
  boost::asio::signal_set signals(io_, SIGTERM, SIGINT);
  signals.async_wait([this](const boost::system::error_code& ec, int signal) {
    if (ec) return;
    log::event(log::Component::kAdmission, log::Level::kInfo, "admission.stopping",
               {{"signal", signal}});
    stop();
  });
  const unsigned threads = servingThreads();
  {
    std::vector<std::jthread> workers;
    for (unsigned i = 1; i < threads; ++i) workers.emplace_back([this] { io_.run(); });
    io_.run();
  }
  return 0;
}

unsigned AdmissionServer::servingThreads() const {
  return config_.settings.threads != 0 ? config_.settings.threads
                                       : std::max(1u, std::thread::hardware_concurrency());
}

uint16_t AdmissionServer::webhookPort() const { return webhookServer_->port(); }

uint16_t AdmissionServer::metricsPort() const {
  return metricsServer_ ? metricsServer_->port() : 0;
}

}  // namespace hostport::admission
