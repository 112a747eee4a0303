#include "agent/service/pod_handlers.h"

#include <algorithm>
#include <boost/asio/post.hpp>
#include <boost/asio/steady_timer.hpp>

#include "agent/api/json_codec.h"
#include "agent/api/pod_codec.h"
#include "agent/log/event_log.h"
#include "agent/server/caller_identity.h"
#include "agent/service/netns_id.h"
#include "common/quote.h"

namespace hostport::agent::service {
namespace {

using api::HttpResponse;
using log::Component;
using log::Level;

/// The pod socket's refusals: 403 and a machine code a script can test, with the reason.
constexpr std::string_view kUnidentified = "unidentified_caller";
constexpr std::string_view kNodeNetwork = "node_network";
constexpr std::string_view kNoLease = "no_lease";

HttpResponse refuse(std::string_view code, const std::string& message, const std::string& pid) {
  log::event(Component::kServer, Level::kDebug, "server.pod_refused",
             {{"code", code}, {"pid", pid}, {"cause", message}});
  return server::errorResponse(403, code, message);
}

std::string pidText(const server::ConnectionPeer& peer) {
  return peer.process ? std::to_string(peer.process->pid()) : "unknown";
}

std::string netnsText(const NetnsId& netns) { return "net:[" + std::to_string(netns.inode) + "]"; }

std::string namedPorts(const std::vector<Lease>& leases) {
  std::string names;
  for (const Lease& lease : leases) {
    for (const PortGrant& grant : lease.ports) {
      if (grant.name.empty()) continue;
      names += (names.empty() ? "" : ", ") + grant.name;
    }
  }
  return names.empty() ? "none" : names;
}

std::string waitText(std::chrono::milliseconds wait) {
  return wait.count() % 1000 == 0 ? std::to_string(wait.count() / 1000) + "s"
                                  : std::to_string(wait.count()) + "ms";
}

}  // namespace

/// A request parked until its netns gets a lease or its wait is over, whichever comes first.
struct PodHandlers::Waiter {
  explicit Waiter(boost::asio::io_context& io) : timer(io) {}
  server::HttpRequest request;
  std::string portName;
  server::Responder respond;
  NetnsId netns;
  std::chrono::milliseconds wait{0};
  boost::asio::steady_timer timer;
  std::multimap<NetnsKey, std::weak_ptr<Waiter>>::iterator entry;
  bool done = false;
};

PodHandlers::PodHandlers(AgentService& service, boost::asio::io_context& io, NetnsId nodeNetns)
    : service_(service), io_(io), nodeNetns_(nodeNetns) {}

void PodHandlers::registerRoutes(server::Router& router) {
  const auto self = std::string(api::kSelfPath);
  router.add("GET", self,
             [this](const server::HttpRequest& request, const server::PathParams&,
                    server::Responder respond) { answer(request, {}, std::move(respond)); });
  router.add("GET", std::string(api::kSelfPortsPath) + "/{name}",
             [this](const server::HttpRequest& request, const server::PathParams& params,
                    server::Responder respond) {
               answer(request, params.at("name"), std::move(respond));
             });
}

void PodHandlers::answer(const server::HttpRequest& request, const std::string& portName,
                         server::Responder respond) {
  std::chrono::milliseconds wait{0};
  for (const auto& [name, value] : request.query) {
    if (name != api::kWaitParameter) {
      return respond(server::errorResponse(
          400, "invalid_argument",
          "unknown parameter " + quoteText(name) + " (the pod socket takes only wait)"));
    }
    auto parsed = api::parseWait(value);
    if (!parsed)
      return respond(server::errorResponse(400, "invalid_argument", parsed.error().message));
    wait = *parsed;
  }
  if (!request.peer) {  // a bug: this router is served only by the pod socket, which identifies
    return respond(server::errorResponse(500, "internal", "the caller was not identified"));
  }
  const server::ConnectionPeer& peer = *request.peer;
  if (!peer.process) {
    return respond(refuse(kUnidentified,
                          "cannot identify the calling process: " + peer.process.error().message,
                          pidText(peer)));
  }
  if (!peer.netns) {
    return respond(
        refuse(kUnidentified,
               "cannot read the calling process's network namespace: " + peer.netns.error().message,
               pidText(peer)));
  }
  const NetnsId netns = *peer.netns;
  if (netns == nodeNetns_) {
    return respond(refuse(kNodeNetwork,
                          "the caller (pid " + pidText(peer) +
                              ") is in the node's network namespace: a node process or a "
                              "hostNetwork pod has no hostport lease; the pod socket answers pods "
                              "only",
                          pidText(peer)));
  }
  if (tryAnswer(request, portName, netns, respond)) return;
  if (wait.count() == 0) {
    return respond(refuse(kNoLease,
                          "no hostport lease holds the caller's network namespace " +
                              netnsText(netns) +
                              ": the pod asked for no host ports, or its sandbox is not set up "
                              "yet (?wait=10s waits for it)",
                          pidText(peer)));
  }
  // Waiting is for a sandbox whose ADD has not finished: a netns no sandbox will ever have (one
  // the caller made itself) has nothing to wait for, and would hold its connection for nothing.
  if (!peer.namespaces) {
    return respond(refuse(
        kUnidentified,
        "cannot tell who made the caller's network namespace: " + peer.namespaces.error().message,
        pidText(peer)));
  }
  if (const auto never = server::whyNeverASandbox(peer.namespaces->netnsOwner)) {
    return respond(refuse(kNoLease,
                          "no hostport lease holds the caller's network namespace " +
                              netnsText(netns) + ", and none ever will: " + *never +
                              " (a pod's sandbox is made by the container runtime), so there is "
                              "nothing to wait for",
                          pidText(peer)));
  }
  park(request, portName, netns, wait, std::move(respond));
}

void PodHandlers::park(const server::HttpRequest& request, const std::string& portName,
                       const NetnsId& netns, std::chrono::milliseconds wait,
                       server::Responder respond) {
  auto waiter = std::make_shared<Waiter>(io_);
  waiter->request = request;
  waiter->portName = portName;
  waiter->respond = std::move(respond);
  waiter->netns = netns;
  waiter->wait = wait;
  waiter->entry = waiters_.emplace(NetnsKey{netns.device, netns.inode}, waiter);
  log::event(
      Component::kServer, Level::kDebug, "server.pod_waiting",
      {{"pid", pidText(*request.peer)}, {"netns_inode", netns.inode}, {"wait_ms", wait.count()}});
  waiter->timer.expires_after(wait);
  waiter->timer.async_wait([this, waiter](boost::system::error_code) {
    if (waiter->done) return;
    finish(*waiter);
    waiter->respond(refuse(kNoLease,
                           "no hostport lease came for the caller's network namespace " +
                               netnsText(waiter->netns) + " within wait=" + waitText(waiter->wait),
                           pidText(*waiter->request.peer)));
  });
  // A client that closes its connection frees it, and its slot, now: not when the wait ends.
  if (request.clientGone) {
    request.clientGone->onGone([this, weak = std::weak_ptr<Waiter>(waiter)] {
      boost::asio::post(io_, [this, weak] {
        const auto waiter = weak.lock();
        if (!waiter || waiter->done) return;
        log::event(Component::kServer, Level::kDebug, "server.pod_wait_abandoned",
                   {{"pid", pidText(*waiter->request.peer)}, {"netns_inode", waiter->netns.inode}});
        finish(*waiter);
        waiter->respond(server::errorResponse(499, "client_gone", "the client closed"));
      });
    });
  }
}

void PodHandlers::finish(Waiter& waiter) {
  waiter.done = true;
  waiters_.erase(waiter.entry);
  waiter.timer.cancel();
  if (waiter.request.clientGone) waiter.request.clientGone->onGone({});
}

bool PodHandlers::tryAnswer(const server::HttpRequest& request, const std::string& portName,
                            const NetnsId& netns, const server::Responder& respond) {
  std::vector<Lease> leases = service_.leasesInNetns(netns);
  // The kernel hands a freed namespace's inode to the next namespace made, and a lease outlives
  // its sandbox until the reconciler's grace has passed (or the agent, down, saw no DEL). Only a
  // lease whose recorded netns path still names this namespace is the caller's.
  std::erase_if(leases, [](const Lease& lease) {
    return netnsLiveness(sandboxOf(lease)) != NetnsLiveness::kAlive;
  });
  if (leases.empty()) return false;
  const bool onePod = std::ranges::all_of(
      leases, [&](const Lease& lease) { return lease.pod.uid == leases.front().pod.uid; });
  if (!onePod) {
    // Never another pod's data: two pods cannot share a live namespace, so this is state to
    // repair, not an answer to give.
    log::event(Component::kServer, Level::kWarn, "server.pod_ambiguous_network",
               {{"pid", pidText(*request.peer)}, {"leases", leases.size()}});
    respond(server::errorResponse(403, kNoLease,
                                  "this network namespace holds leases of more than one pod"));
    return true;
  }
  HttpResponse response;
  if (portName.empty()) {
    response = {200, "application/json", api::dumpBody(api::selfBody(leases))};
  } else if (const auto grant = api::namedPort(leases, portName)) {
    response = {200, "text/plain", api::portText(*grant)};
  } else {
    response = server::errorResponse(
        404, "not_found",
        "no port named " + quoteText(portName) +
            " in this pod's lease (its named ports: " + namedPorts(leases) + ")");
  }
  // Last, right before the answer leaves: the process that connected must still be the one
  // there, or a recycled pid could read another pod's ports.
  const server::ConnectionPeer& peer = *request.peer;
  if (auto unchanged = peer.process->checkUnchanged(); !unchanged) {
    log::event(Component::kServer, Level::kInfo, "server.pod_caller_gone",
               {{"pid", pidText(peer)}, {"cause", unchanged.error().message}});
    respond(server::errorResponse(
        403, kUnidentified, "the process that connected is gone: " + unchanged.error().message));
    return true;
  }
  respond(std::move(response));
  return true;
}

void PodHandlers::leaseGranted(const Lease& lease) {
  if (!lease.netnsId.known()) return;
  boost::asio::post(io_, [this, netns = lease.netnsId] { wake(netns); });
}

void PodHandlers::wake(const NetnsId& netns) {
  const auto [first, last] = waiters_.equal_range({netns.device, netns.inode});
  std::vector<std::shared_ptr<Waiter>> woken;
  for (auto it = first; it != last; ++it) {
    if (auto waiter = it->second.lock()) woken.push_back(std::move(waiter));
  }
  for (const auto& waiter : woken) {
    if (waiter->done || !tryAnswer(waiter->request, waiter->portName, netns, waiter->respond)) {
      continue;
    }
    finish(*waiter);
  }
}

}  // namespace hostport::agent::service
