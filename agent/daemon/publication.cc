#include "agent/daemon/publication.h"

#include <linux/netlink.h>

#include <chrono>
#include <cstdlib>
#include <optional>
#include <string>
#include <utility>

#include "agent/log/event_log.h"
#include "agent/service/pool_capacity.h"
#include "agent/service/socket_probe.h"
#include "netlink/socket_pool.h"

namespace hostport::agent::daemon {

namespace {

/// The Node's capacity is patched again, changed or not, every this many counts (5 minutes at the
/// default capacitySeconds: 10), should someone have edited the Node.
constexpr uint64_t kCapacityResendEvery = 30;

struct Cluster {
  kube::ClusterConfig config;
  std::string node;
};

/// The cluster the agent publishes to: --kubeconfig, else the in-cluster config; nullopt (and
/// one log line saying publication is off) with neither, or without a node name.
std::optional<Cluster> clusterOf(const config::AgentConfig& config) {
  const auto off = [](const std::string& reason, const std::string& cause = {}) {
    log::event(log::Component::kKube, cause.empty() ? log::Level::kInfo : log::Level::kWarn,
               "kube.publication_off", {{"reason", reason}, {"cause", cause}});
    return std::nullopt;
  };
  auto found =
      kube::findCluster(config.kubeconfig, [](const char* name) { return std::getenv(name); });
  if (!found) return off("no_usable_config", found.error().message);
  if (!*found) return off("not_in_a_cluster");
  std::string node = config::nodeNameOf(config);
  if (node.empty()) return off("no_node_name", "set --node-name or env NODE_NAME");
  return Cluster{std::move(**found), std::move(node)};
}

/// Counts the pools' capacity every config.capacitySeconds (agent/service/pool_capacity.h); the
/// publisher patches a change, and every kCapacityResendEvery counts the value as it stands.
std::jthread watchCapacity(const config::AgentConfig& config, publish::Publisher& publisher) {
  if (config.capacitySeconds == 0) return {};
  const auto period = std::chrono::seconds(config.capacitySeconds);
  return std::jthread([pools = config.pools, &publisher, period](std::stop_token stop) {
    // Stopping this thread stops the publisher, whose wait this thread sleeps in.
    const std::stop_callback stopPublisher(stop, [&publisher] { publisher.stop(); });
    auto sockets = netlink::NetlinkSocketPool::create(NETLINK_SOCK_DIAG);
    const service::ProbeScope scope{{Protocol::kTcp, Protocol::kUdp, Protocol::kSctp},
                                    service::poolSpans(pools)};
    for (uint64_t count = 1; !stop.stop_requested(); ++count) {
      if (sockets) {
        if (auto probe = service::SocketTableProbe::snapshot(*sockets, scope)) {
          publisher.nodeCapacity(service::poolCapacities(pools, **probe),
                                 count % kCapacityResendEvery == 0);
        }
      }
      if (!publisher.waitUntil(std::chrono::steady_clock::now() + period)) return;
    }
  });
}

}  // namespace

Result<std::unique_ptr<Publication>> Publication::start(const config::AgentConfig& config,
                                                        service::AgentService& service,
                                                        service::Metrics& metrics) {
  auto cluster = clusterOf(config);
  if (!cluster) return nullptr;
  std::unique_ptr<Publication> publication(new Publication());
  // The publisher sends with the client, and the client waits with the publisher (a stop cuts its
  // backoff short): the publisher is made first, the client next, and nothing sends before start.
  publication->publisher_ = std::make_unique<publish::Publisher>(
      publish::PublisherOptions{.nodeName = cluster->node,
                                .stateDir = config.stateDir,
                                .settleDelay = std::chrono::milliseconds(config.publishSettleMs)},
      [client = &publication->client_](const kube::ApiRequest& request) -> Result<int> {
        HOSTPORT_TRY(const auto response, (*client)->send(request));
        return response.status;
      });
  publish::Publisher& publisher = *publication->publisher_;
  const auto clientOptions = kube::KubeClientOptions::paced(config.apiQps, config.apiBurst);
  HOSTPORT_TRY(publication->client_,
               kube::KubeClient::create(cluster->config, clientOptions, [&publisher](auto until) {
                 return publisher.waitUntil(until);
               }));
  publisher.recover(service.list("", ""));
  service.watchLeases(
      {.granted = [&publisher](const Lease& lease) { publisher.granted(lease); },
       .released = [&publisher](const Lease& lease) { publisher.released(lease); }});
  metrics.addSource([&publisher, client = publication->client_.get()](auto& out) {
    publisher.writeMetrics(out);
    client->writeMetrics(out);
  });
  publisher.start();
  publication->capacity_ = watchCapacity(config, publisher);
  if (config.watchPods) {
    HOSTPORT_TRY(publication->podWatch_,
                 PodWatch::create(cluster->config, cluster->node, config, metrics));
    pods::NodePods& pods = publication->podWatch_->pods();
    publication->hostNetwork_ =
        std::make_unique<HostNetworkPods>(service, pods, publisher, config.pools);
    publication->poolRequests_ = std::make_unique<PoolRequestCheck>(config.pools, pods, publisher);
    // The leases held since before this start count as granted; their pods are judged once the
    // first list brings them.
    for (const Lease& held : service.list("", "")) publication->poolRequests_->granted(held);
    service.watchLeases({.granted = [check = publication->poolRequests_.get()](
                                        const Lease& lease) { check->granted(lease); },
                         .released = [check = publication->poolRequests_.get()](
                                         const Lease& lease) { check->released(lease); }});
    publication->deletedPods_ = std::make_unique<DeletedPodLeases>(
        service, pods, std::chrono::seconds(config.vanishedGraceSeconds));
    service.watchLeases({.granted = [deleted = publication->deletedPods_.get()](
                                        const Lease& lease) { deleted->granted(lease); },
                         .released = [deleted = publication->deletedPods_.get()](
                                         const Lease& lease) { deleted->released(lease); }});
    publication->deletedPods_->start();
    publication->podWatch_->start();
  }
  log::event(log::Component::kKube, log::Level::kInfo, "kube.publication_on",
             {{"server", cluster->config.server()},
              {"source", cluster->config.source},
              {"node", cluster->node},
              {"qps", config.apiQps},
              {"burst", config.apiBurst},
              {"watch_pods", config.watchPods}});
  return publication;
}

}  // namespace hostport::agent::daemon
