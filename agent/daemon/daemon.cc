#include "agent/daemon/daemon.h"

#include <sys/resource.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <optional>
#include <random>
#include <string>
#include <utility>

#include "agent/api/json_codec.h"
#include "agent/config/listen_address.h"
#include "agent/daemon/pool_reservation.h"
#include "agent/daemon/recovery.h"
#include "agent/log/event_log.h"
#include "agent/service/api_handlers.h"
#include "agent/service/caller_pod.h"
#include "agent/service/netns_id.h"
#include "agent/service/socket_probe.h"
#include "common/heap.h"
#include "hostnet/netlink_host_network.h"
#include "nft/kernel/nft_ruleset.h"

namespace hostport::agent::daemon {

namespace {

/// Long enough for the requests in flight to get their error answers once the store failed.
constexpr std::chrono::milliseconds kStoreFailureGrace{1'000};

/// The soft limit of open files raised to the hard one: every pod socket connection holds two
/// (the socket and its caller's /proc dir), 512 of them alone would reach a default soft limit of
/// 1024, and EMFILE is process-wide (the journal, netlink and the control socket too).
void raiseOpenFileLimit() {
  rlimit limit{};
  if (::getrlimit(RLIMIT_NOFILE, &limit) != 0 || limit.rlim_cur >= limit.rlim_max) return;
  const rlim_t was = limit.rlim_cur;
  limit.rlim_cur = limit.rlim_max;
  if (::setrlimit(RLIMIT_NOFILE, &limit) == 0) {
    log::event(
        log::Component::kAgent, log::Level::kDebug, "agent.open_files_raised",
        {{"from", static_cast<uint64_t>(was)}, {"to", static_cast<uint64_t>(limit.rlim_cur)}});
  }
}

/// agent.pool, one per pool: what the agent serves.
void logPools(const std::vector<core::PoolSpec>& pools) {
  const auto joined = [](const auto& items, auto name) {
    std::string text;
    for (const auto& item : items) text += (text.empty() ? "" : ",") + std::string(name(item));
    return text;
  };
  for (const auto& pool : pools) {
    const std::string protocols =
        joined(pool.protocols, [](PortProtocol protocol) { return protocolName(protocol); });
    const std::string namespaces =
        joined(pool.rules.namespaces, [](const std::string& pattern) { return pattern; });
    log::event(log::Component::kAgent, log::Level::kInfo, "agent.pool",
               {{"name", pool.name},
                {"ranges", joined(pool.ranges, [](const auto& range) { return range.str(); })},
                {"strategy", core::strategyName(pool.strategy)},
                {"protocols", protocols.empty() ? "all" : protocols},
                {"reuse_delay_seconds", pool.reuseDelaySeconds},
                {"namespaces", namespaces.empty() ? std::string("all") : namespaces},
                {"max_ports_per_namespace", pool.rules.maxPortsPerNamespace.value_or(0)},
                {"max_ports_per_pod", pool.rules.maxPortsPerPod.value_or(0)}});
  }
}

/// The one writer of table ip/ip6 hostport, in the agent's netns; route_localnet under
/// config.procSysNet.
Result<std::unique_ptr<service::ForwardWriter>> openForwardWriter(
    const config::AgentConfig& config) {
  HOSTPORT_TRY(auto ruleset, nft::kernel::NftRuleset::create());
  HOSTPORT_TRY(auto network, hostnet::NetlinkHostNetwork::create(config.procSysNet));
  return std::make_unique<service::ForwardWriter>(std::move(ruleset), std::move(network));
}

}  // namespace

Daemon::Daemon(config::AgentConfig config, config::CommandLine flags)
    : config_(std::move(config)), flags_(std::move(flags)), lifecycle_(io_, kStoreFailureGrace) {}

Result<std::unique_ptr<Daemon>> Daemon::start(config::AgentConfig config,
                                              config::CommandLine flags) {
  raiseOpenFileLimit();
  configureHeap();
  std::unique_ptr<Daemon> daemon(new Daemon(std::move(config), std::move(flags)));
  HOSTPORT_TRY_VOID(daemon->startUp());
  return daemon;
}

int Daemon::serve() {
  io_.run();
  return lifecycle_.exitCode();
}

Result<void> Daemon::startUp() {
  store::StoreOptions storeOptions;
  storeOptions.onFailure = [this](const Error& cause) { lifecycle_.storeFailed(cause); };
  std::random_device seed;
  HOSTPORT_TRY(
      RecoveredState recovered,
      recoverState(
          config_.stateDir, config_.pools,
          [rng = std::mt19937_64(seed())]() mutable { return rng(); }, std::move(storeOptions)));
  store_ = std::move(recovered.store);
  if (config_.reserveLocalPorts) {
    if (auto reserved =
            reservePoolPorts(config_.pools, hostnet::localReservedPortsPath(config_.procSysNet));
        !reserved) {
      return withContext(reserved.error(), "cannot reserve pool ports from ephemeral use");
    }
  }
  auto probes = service::SocketProbeFactory::create(config_.pools);
  if (!probes) return withContext(probes.error(), "cannot read the host's sockets");
  auto writer = openForwardWriter(config_);
  if (!writer) return withContext(writer.error(), "cannot open table ip/ip6 hostport");
  writer_ = std::move(*writer);
  service_ = std::make_unique<service::AgentService>(
      std::move(recovered.allocator), *store_, std::move(*probes), metrics_,
      service::ServiceOptions{.compactAfterJournalBytes = config_.compactAfterJournalBytes,
                              .writer = writer_.get(),
                              .emptyGcMaxLeases = config_.emptyGcMaxLeases,
                              .allowEmptyGc = config_.allowEmptyGc});
  // Before the control socket: a pod socket that cannot start stops the agent before any grant.
  HOSTPORT_TRY_VOID(servePods());
  openCsi();
  HOSTPORT_TRY(publication_, Publication::start(config_, *service_, metrics_));
  HOSTPORT_TRY_VOID(serveCsi());
  // Before the socket serves: release notes first. The table is brought to the leases by the
  // reconciler's first pass, on its own thread, while the socket serves.
  if (auto started = startReconciler(); !started) {
    return withContext(started.error(), "cannot start the reconciler");
  }
  service::registerApiHandlers(router_, *service_, metrics_, ready_);
  // The body limit is the client's too (api::kMaxRequestBytes): a GC of every key the plugin
  // accepts fits.
  HOSTPORT_TRY(server_, server::UnixHttpServer::listen(
                            io_, config_.socketPath, 0600, router_,
                            server::ServerLimits{.maxBodyBytes = api::kMaxRequestBytes}));
  service::registerMetricsHandler(metricsRouter_, *service_);
  serveMetrics();
  lifecycle_.watchSignals();
  watchConfig();
  ready_ = true;
  logPools(config_.pools);
  log::event(log::Component::kAgent, log::Level::kInfo, "agent.serving",
             {{"socket", config_.socketPath},
              {"pod_socket", config_.podSocketPath.empty() ? "off" : config_.podSocketPath},
              {"pools", config_.pools.size()}});
  return chainCni();
}

/// The pod socket (config.podSocketPath), on podIo_ and a thread of its own, or nothing when the
/// path is empty. Grants reach its waiting requests from here on.
Result<void> Daemon::servePods() {
  if (config_.podSocketPath.empty() && !config_.csiDriver) return {};
  // A caller in the agent's own netns (hostNetwork, as the DaemonSet runs it) is on the node.
  podHandlers_ = std::make_unique<service::PodHandlers>(
      *service_, podIo_, service::netnsIdOf("/proc/self/ns/net").value_or(NetnsId{}));
  podHandlers_->registerRoutes(podRouter_);
  server::PodServerOptions options;
  options.path = config_.podSocketPath;
  HOSTPORT_TRY(podServer_, server::PodServer::start(podIo_, podRouter_, std::move(options)));
  service_->watchLeases({.granted = [handlers = podHandlers_.get()](
                                        const Lease& lease) { handlers->leaseGranted(lease); },
                         .released = {}});
  return {};
}

/// The hostport.io CSI driver (csi/csi_driver.h), opened, or nothing when config.csiDriver is
/// off. Its volumes' sockets are the pod server's; their files follow the pods' leases, written
/// before a grant is answered. It serves once the pod watch runs (serveCsi()).
void Daemon::openCsi() {
  if (!config_.csiDriver) return;
  csi::CsiDriverOptions options;
  options.kubeletDir = config_.kubeletDir;
  options.stateDir = config_.stateDir;
  options.nodeId = config::nodeNameOf(config_);
  if (options.nodeId.empty()) {
    char host[256] = {};
    if (::gethostname(host, sizeof host - 1) == 0) options.nodeId = host;
  }
  csiDriver_ = csi::CsiDriver::open(
      [service = service_.get()](const std::string& uid) {
        return service::podLeases(*service, uid);
      },
      [server = podServer_.get()](const std::string& path, const std::string& uid) {
        return server->serveVolume(path, uid);
      },
      std::move(options));
  const auto changed = [driver = csiDriver_.get()](const Lease& lease) {
    driver->leaseChanged(lease);
  };
  service_->watchLeases({.granted = changed, .released = changed, .grantedBeforeAnswer = true});
  metrics_.addSource(
      [driver = csiDriver_.get()](prometheus::TextWriter& out) { driver->writeMetrics(out); });
}

/// The CSI driver's gRPC sockets: a hostNetwork pod's publish waits for the watch's lease.
Result<void> Daemon::serveCsi() {
  if (!csiDriver_) return {};
  static constexpr std::chrono::seconds kHostNetworkLeaseWait{10};
  return csiDriver_->serve([publication = publication_.get()](const std::string& uid) {
    if (publication != nullptr) publication->awaitHostNetworkLease(uid, kHostNetworkLeaseWait);
  });
}

/// The reconciler (service/reconciler.h), or nothing when config.tableRepairSeconds is 0: its
/// start-up releases what the release spool holds, then its thread runs the passes.
Result<void> Daemon::startReconciler() {
  if (config_.tableRepairSeconds == 0) return {};
  HOSTPORT_TRY(auto guardRuleset, nft::kernel::NftRuleset::create());
  HOSTPORT_TRY(auto readerRuleset, nft::kernel::NftRuleset::create());
  service::ReconcilerOptions options;
  options.period = std::chrono::seconds(config_.tableRepairSeconds);
  options.vanishedGrace = std::chrono::seconds(config_.vanishedGraceSeconds);
  options.releaseSpool = config_.releaseSpool;
  reconciler_ = std::make_unique<service::Reconciler>(
      *service_, *writer_, std::make_unique<nft::kernel::LayoutGuard>(std::move(guardRuleset)),
      std::move(readerRuleset), metrics_, std::move(options));
  // Subscribed before the first pass, so nothing changed during it goes unseen.
  auto events = nft::kernel::TableEvents::open();
  if (!events) {
    log::event(log::Component::kTable, log::Level::kWarn, "table.events_unavailable",
               {{"cause", events.error().message}, {"fallback", "the periodic pass"}});
  }
  reconciler_->startUp();
  reconciler_->run(events ? std::optional(std::move(*events)) : std::nullopt);
  return {};
}

/// GET /metrics on config.metricsAddress over TCP, or nothing when it is empty. A port that cannot
/// be bound is a warning, not a stop: the agent's work is the pods' ports, not its metrics.
void Daemon::serveMetrics() {
  if (config_.metricsAddress.empty()) return;
  const auto address =
      *config::parseListenAddress(config_.metricsAddress);  // finalizeConfig checked
  auto listener =
      server::TcpHttpServer::listen(io_, address.address, address.port, metricsRouter_, {});
  if (!listener) {
    log::event(log::Component::kServer, log::Level::kWarn, "server.metrics_unavailable",
               {{"address", address.str()}, {"cause", listener.error().message}});
    return;
  }
  metricsServer_ = std::move(*listener);
}

/// Pool rules follow the file without a restart (config_reload.h says what else does not): a
/// reload on SIGHUP, and on a change of the file while it can be watched.
void Daemon::watchConfig() {
  reloader_ = std::make_unique<config::ConfigReloader>(
      flags_, config_, [this](const std::string& pool, core::PoolRules rules) {
        return service_->setPoolRules(pool, std::move(rules));
      });
  lifecycle_.watchReloadSignal([this] { (void)reloader_->reload("signal"); });
  if (flags_.configPath.empty()) return;
  auto watch =
      config::ConfigWatch::start(flags_.configPath, [this] { (void)reloader_->reload("file"); });
  if (!watch) {
    log::event(
        log::Component::kAgent, log::Level::kWarn, "agent.config_watch_unavailable",
        {{"path", flags_.configPath}, {"cause", watch.error().message}, {"fallback", "SIGHUP"}});
    return;
  }
  configWatch_ = std::move(*watch);
}

/// Keeps the plugin chained into the node's CNI configuration (cni_config/chainer.h), or nothing
/// when chainCni is off. A fight with another installer makes /readyz fail until it is over.
/// Never unchains: SIGTERM must not take networking away from pods.
Result<void> Daemon::chainCni() {
  const bool inCluster = std::getenv("KUBERNETES_SERVICE_HOST") != nullptr;
  if (!config::chainsCni(config_, inCluster)) {
    log::event(log::Component::kCni, log::Level::kInfo, "cni.chaining_off",
               {{"chain_cni", config_.chainCni == config::ChainCni::kOff ? "false" : "auto"},
                {"in_cluster", inCluster}});
    return {};
  }
  cni_config::ChainerOptions options;
  options.paths = {config_.cniConfDir, config_.stateDir};
  options.chain.replacePortmap = config_.replacePortmap;
  if (config_.socketPath != api::kDefaultAgentSocket)
    options.chain.agentSocket = config_.socketPath;
  options.pluginBinary = std::filesystem::path(config_.cniBinDir) / "hostport";
  options.onFlapping = [this](bool flapping) { ready_ = !flapping; };
  auto chainer = cni_config::Chainer::start(std::move(options));
  if (!chainer) return withContext(chainer.error(), "cannot watch the CNI configuration");
  chainer_ = std::move(*chainer);
  return {};
}

}  // namespace hostport::agent::daemon
