#pragma once
// The agent's run: everything hostport-agent starts, in the order it starts, and its teardown.
//
// Design note: the members are declared in start order, so their destruction is the teardown, on
// the way out of a run and after a start that failed half-way alike. Two orders matter most:
// every lease observer (the pod handlers, the publication) is registered before the first thread
// that can grant or release starts (the reconciler's, then the sockets'); and the journal drains
// (drainJournal_) while the service and those observers are alive, after the threads that commit
// to it have stopped. The chainer starts last: the plugin's first ADD finds the agent serving.

#include <atomic>
#include <boost/asio/io_context.hpp>
#include <functional>
#include <memory>

#include "agent/cni_config/chainer.h"
#include "agent/config/agent_config.h"
#include "agent/config/command_line.h"
#include "agent/config/config_reloader.h"
#include "agent/config/config_watch.h"
#include "agent/csi/csi_driver.h"
#include "agent/daemon/lifecycle.h"
#include "agent/daemon/publication.h"
#include "agent/server/pod_server.h"
#include "agent/server/router.h"
#include "agent/server/tcp_http_server.h"
#include "agent/server/unix_http_server.h"
#include "agent/service/agent_service.h"
#include "agent/service/forward_writer.h"
#include "agent/service/metrics.h"
#include "agent/service/pod_handlers.h"
#include "agent/service/reconciler.h"
#include "agent/store/lease_store.h"
#include "common/error.h"
#include "common/scope_exit.h"

namespace hostport::agent::daemon {

class Daemon {
 public:
  /// Recovers the leases, reserves the pools' ports, opens the table and the sockets, starts the
  /// threads and chains the plugin: the agent serves once this returns. `flags` are read again,
  /// with the file, by a reload (SIGHUP or the file changing). The error says why the agent
  /// could not start; what had started is stopped again, in reverse.
  static Result<std::unique_ptr<Daemon>> start(config::AgentConfig config,
                                               config::CommandLine flags);

  /// Serves until SIGINT or SIGTERM (kExitStopped) or a store failure (kExitStoreFailed).
  int serve();

  Daemon(const Daemon&) = delete;
  Daemon& operator=(const Daemon&) = delete;
  ~Daemon() = default;

 private:
  Daemon(config::AgentConfig config, config::CommandLine flags);
  Result<void> startUp();
  Result<void> servePods();
  void openCsi();
  Result<void> serveCsi();
  Result<void> startReconciler();
  void serveMetrics();
  void watchConfig();
  Result<void> chainCni();

  const config::AgentConfig config_;
  const config::CommandLine flags_;
  boost::asio::io_context io_{1};
  boost::asio::io_context podIo_{1};  // the pod socket's alone (server/pod_server.h)
  Lifecycle lifecycle_;
  std::unique_ptr<store::LeaseStore> store_;
  service::Metrics metrics_;
  std::unique_ptr<service::ForwardWriter> writer_;
  std::unique_ptr<service::AgentService> service_;
  server::Router podRouter_;
  std::unique_ptr<service::PodHandlers> podHandlers_;
  std::unique_ptr<server::PodServer> podServer_;
  // After the pod server, whose thread serves its volumes' sockets; before the drain, as it hears
  // of grants until the journal has drained.
  std::unique_ptr<csi::CsiDriver> csiDriver_;
  std::unique_ptr<Publication> publication_;
  ScopeExit<std::function<void()>> drainJournal_{[this] { store_.reset(); }};
  // Declared after it, so it runs first: nothing asks the service for a lease while the journal
  // drains, or after.
  ScopeExit<std::function<void()>> stopWatching_{[this] {
    if (csiDriver_) csiDriver_->stopServing();  // a publish may ask for a hostNetwork lease
    if (publication_) publication_->stopWatching();
  }};
  std::unique_ptr<service::Reconciler> reconciler_;
  std::atomic<bool> ready_{false};
  server::Router router_;
  std::unique_ptr<server::UnixHttpServer> server_;
  server::Router metricsRouter_;  // GET /metrics and nothing else: TCP never reaches control
  std::unique_ptr<server::TcpHttpServer> metricsServer_;
  std::unique_ptr<config::ConfigReloader> reloader_;
  std::unique_ptr<config::ConfigWatch> configWatch_;
  std::unique_ptr<cni_config::Chainer> chainer_;
};

}  // namespace hostport::agent::daemon
