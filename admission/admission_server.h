#pragma once
// hostport-admission's run: the judge built from the agents' pools, the certificate's source (the
// keeper with its API client, or the files of --tls-cert-file), the first certificate (retried
// until there is one: the server cannot listen without it), then the TLS webhook listener, the
// metrics listener and the thread that looks at the certificate again every check interval.
// Members are declared in start order, so their destruction is the teardown, on a failed start
// as on a stop.

#include <boost/asio/io_context.hpp>
#include <condition_variable>
#include <memory>
#include <mutex>
#include <thread>
#include <vector>

#include "admission/admission_config.h"
#include "admission/certificate_keeper.h"
#include "admission/claim_repair.h"
#include "admission/cluster_claimer.h"
#include "admission/webhook_metrics.h"
#include "admission/webhook_routes.h"
#include "agent/core/allocator.h"
#include "agent/server/router.h"
#include "agent/server/tcp_http_server.h"
#include "agent/server/tls_http_server.h"
#include "kube/kube_client.h"

namespace hostport::admission {

class AdmissionServer {
 public:
  /// Starts everything; blocks in the first certificate pass until it succeeds or stop() is
  /// called. Errors name what failed (a pool the allocator refuses, no cluster, a port in use).
  static Result<std::unique_ptr<AdmissionServer>> start(ResolvedAdmissionConfig config);
  ~AdmissionServer();

  /// Serves until SIGTERM or SIGINT (or stop()); returns the process's exit code.
  int serve();
  /// Ends serve(), and a start still waiting for its first certificate; any thread.
  void stop();

  uint16_t webhookPort() const;
  uint16_t metricsPort() const;  // 0 when there is no metrics listener
  const ClusterClaimer* claimer() const { return claimer_.get(); }  // null without cluster pools
  const ClaimRepair* repair() const { return repair_.get(); }       // null without cluster pools

 private:
  explicit AdmissionServer(ResolvedAdmissionConfig config);
  /// Sleeps until `until` or stop(); false when stopped.
  bool waitUntil(std::chrono::steady_clock::time_point until);
  /// The serving certificate as its source has it now (a keeper pass, or the files), logged and
  /// counted; nullopt when it could not be had.
  std::optional<tls::PemCertificate> fetchCertificate();
  std::optional<tls::PemCertificate> keepCertificates();
  std::optional<tls::PemCertificate> readCertificateFiles();
  void watchCertificates(tls::PemCertificate serving);
  unsigned servingThreads() const;  // --threads, or one per core
  /// The cluster pools' claimer, with API clients of its own.
  Result<void> startClaimer(const kube::ClusterConfig& cluster);

  ResolvedAdmissionConfig config_;
  std::mutex mutex_;  // guards stopped_
  std::condition_variable wake_;
  bool stopped_ = false;
  std::unique_ptr<agent::core::Allocator> judge_;
  std::unique_ptr<kube::KubeClient> client_;   // null with certificate files
  std::unique_ptr<CertificateKeeper> keeper_;  // null with certificate files
  std::unique_ptr<ClusterClaimer> claimer_;    // null without cluster pools
  std::unique_ptr<ClaimRepair> repair_;        // null without cluster pools
  WebhookMetrics metrics_;
  std::unique_ptr<Webhooks> webhooks_;
  agent::server::Router webhookRouter_;
  agent::server::Router metricsRouter_;
  boost::asio::io_context io_;
  std::unique_ptr<agent::server::TlsHttpServer> webhookServer_;
  std::unique_ptr<agent::server::TcpHttpServer> metricsServer_;
  std::jthread certificateThread_;
};

}  // namespace hostport::admission
