// hostport-agent: owns this node's port pools. Wiring only: config, logs, recovery, socket
// checks, service, socket and lifecycle. Everything it wires is a library with its own tests.

#include <linux/netlink.h>
#include <sys/resource.h>

#include <atomic>
#include <boost/asio/io_context.hpp>
#include <chrono>
#include <cstdlib>
#include <optional>
#include <random>
#include <string>
#include <thread>

#include "agent/api/json_codec.h"
#include "agent/cni_config/chainer.h"
#include "agent/config/agent_config.h"
#include "agent/config/command_line.h"
#include "agent/config/config_reloader.h"
#include "agent/config/config_watch.h"
#include "agent/config/listen_address.h"
#include "agent/kube/kube_client.h"
#include "agent/kube/publisher.h"
#include "agent/log/event_log.h"
#include "agent/server/pod_server.h"
#include "agent/server/tcp_http_server.h"
#include "agent/server/unix_http_server.h"
#include "agent/service/agent_service.h"
#include "agent/service/api_handlers.h"
#include "agent/service/forward_writer.h"
#include "agent/service/heap.h"
#include "agent/service/lifecycle.h"
#include "agent/service/netns_id.h"
#include "agent/service/pod_handlers.h"
#include "agent/service/pool_capacity.h"
#include "agent/service/pool_reservation.h"
#include "agent/service/reconciler.h"
#include "agent/service/recovery.h"
#include "agent/service/socket_probe.h"
#include "common/scope_exit.h"
#include "hostnet/netlink_host_network.h"
#include "netlink/socket_pool.h"
#include "nft/kernel/nft_ruleset.h"

namespace {

using namespace hostport;
using namespace hostport::agent;
using config::AgentConfig;
using server::Router;
using server::ServerLimits;
using server::UnixHttpServer;
using namespace hostport::agent::service;

/// Long enough for the requests in flight to get their error answers once the store failed.
constexpr std::chrono::milliseconds kStoreFailureGrace{1'000};
/// The Node's capacity is patched again, changed or not, every this many counts (5 minutes at the
/// default capacitySeconds: 10).
constexpr uint64_t kCapacityResendEvery = 30;

/// The logs as the flags ask, before the config is read (so its errors are logged that way).
log::Options flagLogOptions(const config::CommandLine& flags) {
  log::Options options;
  const auto format = flags.settings.find("logFormat");
  if (format == flags.settings.end() || !format->second) return options;
  if (auto parsed = log::parseFormat(*format->second)) options.format = *parsed;
  return options;
}

/// agent.pool, one per pool: what the agent serves.
void logPools(const std::vector<core::PoolSpec>& pools) {
  for (const auto& pool : pools) {
    std::string ranges;
    for (const auto& range : pool.ranges) ranges += (ranges.empty() ? "" : ",") + range.str();
    std::string protocols;
    for (const auto protocol : pool.protocols) {
      protocols += (protocols.empty() ? "" : ",") + std::string(protocolName(protocol));
    }
    std::string namespaces;
    for (const auto& pattern : pool.rules.namespaces) {
      namespaces += (namespaces.empty() ? "" : ",") + pattern;
    }
    log::event(log::Component::kAgent, log::Level::kInfo, "agent.pool",
               {{"name", pool.name},
                {"ranges", ranges},
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
Result<std::unique_ptr<ForwardWriter>> openForwardWriter(const AgentConfig& config) {
  HOSTPORT_TRY(auto ruleset, nft::kernel::NftRuleset::create());
  HOSTPORT_TRY(auto network, hostnet::NetlinkHostNetwork::create(config.procSysNet));
  return std::make_unique<ForwardWriter>(std::move(ruleset), std::move(network));
}

Result<std::unique_ptr<Reconciler>> startReconciler(const AgentConfig& config,
                                                    AgentService& service, ForwardWriter& writer,
                                                    Metrics& metrics) {
  HOSTPORT_TRY(auto guardRuleset, nft::kernel::NftRuleset::create());
  HOSTPORT_TRY(auto readerRuleset, nft::kernel::NftRuleset::create());
  ReconcilerOptions options;
  options.period = std::chrono::seconds(config.tableRepairSeconds);
  options.vanishedGrace = std::chrono::seconds(config.vanishedGraceSeconds);
  options.releaseSpool = config.releaseSpool;
  auto reconciler = std::make_unique<Reconciler>(
      service, writer, std::make_unique<nft::kernel::LayoutGuard>(std::move(guardRuleset)),
      std::move(readerRuleset), metrics, std::move(options));
  // Subscribed before the first pass, so nothing changed during it goes unseen.
  auto events = nft::kernel::TableEvents::open();
  if (!events) {
    log::event(log::Component::kTable, log::Level::kWarn, "table.events_unavailable",
               {{"cause", events.error().message}, {"fallback", "the periodic pass"}});
  }
  reconciler->startUp();
  reconciler->run(events ? std::optional(std::move(*events)) : std::nullopt);
  return reconciler;
}

/// Keeps the plugin chained into the node's CNI configuration (agent/cni_config/chainer.h), or
/// nothing when chainCni is off. A fight with another installer makes /readyz fail until it is
/// over. Never unchains: SIGTERM must not take networking away from pods.
Result<std::unique_ptr<cni_config::Chainer>> startCniChainer(const AgentConfig& config,
                                                             std::atomic<bool>& ready) {
  const bool inCluster = std::getenv("KUBERNETES_SERVICE_HOST") != nullptr;
  if (!config::chainsCni(config, inCluster)) {
    log::event(log::Component::kCni, log::Level::kInfo, "cni.chaining_off",
               {{"chain_cni", config.chainCni == config::ChainCni::kOff ? "false" : "auto"},
                {"in_cluster", inCluster}});
    return nullptr;
  }
  cni_config::ChainerOptions options;
  options.paths = {config.cniConfDir, config.stateDir};
  options.chain.replacePortmap = config.replacePortmap;
  if (config.socketPath != api::kDefaultAgentSocket) options.chain.agentSocket = config.socketPath;
  options.pluginBinary = std::filesystem::path(config.cniBinDir) / "hostport";
  options.onFlapping = [&ready](bool flapping) { ready = !flapping; };
  return cni_config::Chainer::start(std::move(options));
}

/// GET /metrics on config.metricsAddress over TCP, or nothing when it is empty. A port that cannot
/// be bound is a warning, not a stop: the agent's work is the pods' ports, not its metrics.
std::unique_ptr<server::TcpHttpServer> serveMetrics(boost::asio::io_context& io,
                                                    const AgentConfig& config,
                                                    const Router& metricsRouter) {
  if (config.metricsAddress.empty()) return nullptr;
  const auto address =
      *config::parseListenAddress(config.metricsAddress);  // finalizeConfig checked
  auto listener =
      server::TcpHttpServer::listen(io, address.address, address.port, metricsRouter, {});
  if (!listener) {
    log::event(log::Component::kServer, log::Level::kWarn, "server.metrics_unavailable",
               {{"address", address.str()}, {"cause", listener.error().message}});
    return nullptr;
  }
  return std::move(*listener);
}

/// The pod socket (config.podSocketPath), on `io` and a thread of its own, or nothing when the
/// path is empty. Grants reach its waiting requests from here on.
Result<std::unique_ptr<server::PodServer>> servePods(boost::asio::io_context& io,
                                                     const AgentConfig& config,
                                                     AgentService& service, Router& router,
                                                     std::unique_ptr<PodHandlers>& handlers) {
  if (config.podSocketPath.empty()) return nullptr;
  // A caller in the agent's own netns (hostNetwork, as the DaemonSet runs it) is on the node.
  handlers = std::make_unique<PodHandlers>(service, io,
                                           netnsIdOf("/proc/self/ns/net").value_or(NetnsId{}));
  handlers->registerRoutes(router);
  server::PodServerOptions options;
  options.path = config.podSocketPath;
  HOSTPORT_TRY(auto pods, server::PodServer::start(io, router, std::move(options)));
  service.watchLeases(
      {.granted = [pods = handlers.get()](const Lease& lease) { pods->leaseGranted(lease); },
       .released = {}});
  return pods;
}

/// The cluster the agent publishes to: --kubeconfig, else the in-cluster config; nullopt (and
/// one log line saying publication is off) with neither, or without a node name.
std::optional<std::pair<kube::ClusterConfig, std::string>> clusterOf(const AgentConfig& config) {
  const auto off = [](const std::string& reason, const std::string& cause = {}) {
    log::event(log::Component::kKube, cause.empty() ? log::Level::kInfo : log::Level::kWarn,
               "kube.publication_off", {{"reason", reason}, {"cause", cause}});
    return std::nullopt;
  };
  Result<std::optional<kube::ClusterConfig>> found =
      config.kubeconfig.empty()
          ? kube::inClusterConfig([](const char* name) { return std::getenv(name); })
          : Result<std::optional<kube::ClusterConfig>>(kube::loadKubeconfig(config.kubeconfig));
  if (!found) return off("no_usable_config", found.error().message);
  if (!*found) return off("not_in_a_cluster");
  std::string node = config.nodeName;
  if (node.empty() && std::getenv("NODE_NAME") != nullptr) node = std::getenv("NODE_NAME");
  if (node.empty()) return off("no_node_name", "set --node-name or env NODE_NAME");
  return std::pair{std::move(**found), std::move(node)};
}

/// Publication on the pods and capacity on the Node (issue 13) from a thread of their own: the
/// API server is never on the ADD path. Nothing when the agent knows no cluster.
Result<std::unique_ptr<kube::Publisher>> startPublisher(const AgentConfig& config,
                                                        AgentService& service, Metrics& metrics,
                                                        std::unique_ptr<kube::KubeClient>& client) {
  auto cluster = clusterOf(config);
  if (!cluster) return nullptr;
  auto& [clusterConfig, node] = *cluster;
  auto publisher = std::make_unique<kube::Publisher>(
      kube::PublisherOptions{node, config.stateDir},
      [&client](const std::string& path, const std::string& body) -> Result<int> {
        HOSTPORT_TRY(const auto response,
                     client->send({"PATCH", path, "application/merge-patch+json", body}));
        return response.status;
      });
  kube::Publisher* const publisherRef = publisher.get();
  kube::KubeClientOptions options;
  options.qps = config.apiQps;
  options.burst = static_cast<int>(config.apiBurst);
  HOSTPORT_TRY(client, kube::KubeClient::create(clusterConfig, options, [publisherRef](auto until) {
                 return publisherRef->waitUntil(until);
               }));
  publisher->recover(service.list("", ""));
  service.watchLeases(
      {.granted = [publisherRef](const Lease& lease) { publisherRef->granted(lease); },
       .released = [publisherRef](const Lease& lease) { publisherRef->released(lease.key); }});
  metrics.addSource([publisherRef, api = client.get()] {
    return publisherRef->metricsText() + api->metricsText();
  });
  publisher->start();
  log::event(log::Component::kKube, log::Level::kInfo, "kube.publication_on",
             {{"server", clusterConfig.server()},
              {"source", clusterConfig.source},
              {"node", node},
              {"qps", config.apiQps},
              {"burst", config.apiBurst}});
  return publisher;
}

/// Counts the pools' capacity every config.capacitySeconds for the Node's extended resources
/// (agent/service/pool_capacity.h); the publisher patches a change, and every kCapacityResendEvery
/// counts the value as it stands, should someone have edited the Node.
std::jthread watchCapacity(const AgentConfig& config, kube::Publisher& publisher) {
  if (config.capacitySeconds == 0) return {};
  const auto period = std::chrono::seconds(config.capacitySeconds);
  return std::jthread([&config, &publisher, period](std::stop_token stop) {
    // Stopping this thread stops the publisher, whose wait this thread sleeps in.
    const std::stop_callback stopPublisher(stop, [&publisher] { publisher.stop(); });
    auto sockets = netlink::NetlinkSocketPool::create(NETLINK_SOCK_DIAG);
    const ProbeScope scope{{Protocol::kTcp, Protocol::kUdp, Protocol::kSctp},
                           poolSpans(config.pools)};
    for (uint64_t count = 1; !stop.stop_requested(); ++count) {
      if (sockets) {
        if (auto probe = SocketTableProbe::snapshot(*sockets, scope)) {
          publisher.nodeCapacity(poolCapacities(config.pools, **probe),
                                 count % kCapacityResendEvery == 0);
        }
      }
      if (!publisher.waitUntil(std::chrono::steady_clock::now() + period)) return;
    }
  });
}

/// Serves until a signal or a store failure; the exit code, or why the agent could not start.
/// `flags` are read again, with the file, by a reload (SIGHUP or the file changing).
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

Result<int> run(const AgentConfig& config, const config::CommandLine& flags) {
  raiseOpenFileLimit();
  configureHeap();
  boost::asio::io_context io(1);
  boost::asio::io_context podIo(1);  // the pod socket's alone (server/pod_server.h)
  Lifecycle lifecycle(io, kStoreFailureGrace);
  store::StoreOptions storeOptions;
  storeOptions.onFailure = [&lifecycle](const Error& cause) { lifecycle.storeFailed(cause); };
  std::random_device seed;
  HOSTPORT_TRY(
      RecoveredState recovered,
      recoverState(
          config.stateDir, config.pools,
          [rng = std::mt19937_64(seed())]() mutable { return rng(); }, std::move(storeOptions)));
  if (config.reserveLocalPorts) {
    if (auto reserved =
            reservePoolPorts(config.pools, hostnet::localReservedPortsPath(config.procSysNet));
        !reserved) {
      return withContext(reserved.error(), "cannot reserve pool ports from ephemeral use");
    }
  }
  auto probes = SocketProbeFactory::create(config.pools);
  if (!probes) return withContext(probes.error(), "cannot read the host's sockets");

  Metrics metrics;
  auto writer = openForwardWriter(config);
  if (!writer) return withContext(writer.error(), "cannot open table ip/ip6 hostport");
  AgentService service(std::move(recovered.allocator), *recovered.store, std::move(*probes),
                       metrics,
                       ServiceOptions{.compactAfterJournalBytes = config.compactAfterJournalBytes,
                                      .writer = writer->get(),
                                      .emptyGcMaxLeases = config.emptyGcMaxLeases,
                                      .allowEmptyGc = config.allowEmptyGc});
  // Before the control socket: a pod socket that cannot start stops the agent before any grant.
  Router podRouter;
  std::unique_ptr<PodHandlers> podHandlers;
  HOSTPORT_TRY(auto podServer, servePods(podIo, config, service, podRouter, podHandlers));
  // Every lease observer (the pod socket's above, the publisher's here) is registered before the
  // first thread that can grant or release starts: the reconciler's, then the sockets'.
  std::unique_ptr<kube::KubeClient> kubeClient;
  HOSTPORT_TRY(auto publisher, startPublisher(config, service, metrics, kubeClient));
  std::jthread capacity;
  if (publisher) capacity = watchCapacity(config, *publisher);
  // On every way out, early error returns included, the journal drains while what its callbacks
  // reach is alive: the service and the lease observers above. What is declared below (the
  // reconciler, the sockets) is gone by then.
  const ScopeExit drainJournal([&recovered] { recovered.store.reset(); });
  // Before the socket serves: release notes first. The table is brought to the leases by the
  // reconciler's first pass, on its own thread, while the socket serves.
  std::unique_ptr<Reconciler> reconciler;
  if (config.tableRepairSeconds > 0) {
    auto started = startReconciler(config, service, **writer, metrics);
    if (!started) return withContext(started.error(), "cannot start the reconciler");
    reconciler = std::move(*started);
  }
  std::atomic<bool> ready{false};
  Router router;
  registerApiHandlers(router, service, metrics, ready);
  // The body limit is the client's too (api::kMaxRequestBytes): a GC of every key the plugin
  // accepts fits.
  HOSTPORT_TRY(auto server,
               UnixHttpServer::listen(io, config.socketPath, 0600, router,
                                      ServerLimits{.maxBodyBytes = api::kMaxRequestBytes}));
  Router metricsRouter;  // GET /metrics and nothing else: TCP never reaches a control endpoint
  registerMetricsHandler(metricsRouter, service);
  auto metricsServer = serveMetrics(io, config, metricsRouter);
  lifecycle.watchSignals();
  // Pool rules follow the file without a restart (config_reload.h says what else does not).
  config::ConfigReloader reloader(flags, config,
                                  [&service](const std::string& pool, core::PoolRules rules) {
                                    return service.setPoolRules(pool, std::move(rules));
                                  });
  lifecycle.watchReloadSignal([&reloader] { (void)reloader.reload("signal"); });
  std::unique_ptr<config::ConfigWatch> configWatch;
  if (!flags.configPath.empty()) {
    auto watch = config::ConfigWatch::start(flags.configPath,
                                            [&reloader] { (void)reloader.reload("file"); });
    if (watch) {
      configWatch = std::move(*watch);
    } else {
      log::event(
          log::Component::kAgent, log::Level::kWarn, "agent.config_watch_unavailable",
          {{"path", flags.configPath}, {"cause", watch.error().message}, {"fallback", "SIGHUP"}});
    }
  }
  ready = true;
  logPools(config.pools);
  log::event(log::Component::kAgent, log::Level::kInfo, "agent.serving",
             {{"socket", config.socketPath},
              {"pod_socket", config.podSocketPath.empty() ? "off" : config.podSocketPath},
              {"pools", config.pools.size()}});
  // Chained once the socket serves: the plugin's first ADD finds the agent.
  auto chainer = startCniChainer(config, ready);
  if (!chainer) return withContext(chainer.error(), "cannot watch the CNI configuration");
  io.run();
  chainer->reset();     // before `ready` goes down for good: the chainer may set it
  configWatch.reset();  // no reload reaches the service from here on
  ready = false;
  if (reconciler) reconciler->stop();
  capacity = {};  // stops the publisher too
  if (publisher) publisher->stop();
  // Drain the journal while the service its callbacks call into is still alive.
  metricsServer.reset();
  podServer.reset();
  server.reset();
  recovered.store.reset();
  return lifecycle.exitCode();
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{
      "hostport-agent: owns this node's host-port pools, allocates ports durably, checks them "
      "against live host sockets, and serves the hostport CNI plugin and hostportctl on a Unix "
      "socket.",
      "hostport-agent"};
  config::CommandLine flags;
  config::registerFlags(app, flags);
  CLI11_PARSE(app, argc, argv);

  log::configure(flagLogOptions(flags));
  auto config = config::resolveConfig(flags);
  if (!config) {
    log::event(log::Component::kAgent, log::Level::kError, "agent.config_invalid",
               {{"cause", config.error().message}});
    return 2;
  }
  // finalizeConfig() checked both.
  log::configure({.level = *log::parseLevel(config->logLevel),
                  .format = *log::parseFormat(config->logFormat),
                  .sink = {}});
  auto exitCode = run(*config, flags);
  if (!exitCode) {
    log::event(log::Component::kAgent, log::Level::kError, "agent.start_failed",
               {{"cause", exitCode.error().message}});
    return 1;
  }
  return *exitCode;
}
