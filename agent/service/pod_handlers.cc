#include "agent/service/pod_handlers.h"

#include <algorithm>
#include <boost/asio/post.hpp>
#include <boost/asio/steady_timer.hpp>

#include "agent/api/json_codec.h"
#include "agent/api/pod_codec.h"
#include "agent/log/event_log.h"
#include "agent/server/caller_identity.h"
#include "common/quote.h"

namespace hostport::agent::service {
namespace {

using api::HttpResponse;
using log::Component;
using log::Level;

HttpResponse refuse(const Refusal& refusal, const server::ConnectionPeer& peer) {
  log::event(Component::kServer, Level::kDebug, "server.pod_refused",
             {{"code", refusal.code}, {"pid", peer.pidText()}, {"cause", refusal.message}});
  return server::errorResponse(403, refusal.code, refusal.message);
}

/// What a waiter waits for: a lease of its sandbox's netns, or a lease of its pod.
PodHandlers::WaitKey waitKeyOf(const CallerPod& caller) {
  if (const auto* sandbox = std::get_if<SandboxCaller>(&caller)) {
    return std::pair(sandbox->netns.device, sandbox->netns.inode);
  }
  if (const auto* volume = std::get_if<VolumeCaller>(&caller)) return volume->podUid;
  return std::get<HostNetworkCaller>(caller).podUid;
}

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

/// A request parked until its pod gets a lease or its wait is over, whichever comes first.
struct PodHandlers::Waiter {
  Waiter(boost::asio::io_context& io, CallerPod caller) : caller(std::move(caller)), timer(io) {}
  server::HttpRequest request;
  Query query;
  server::Responder respond;
  CallerPod caller;
  std::chrono::milliseconds wait{0};
  boost::asio::steady_timer timer;
  std::multimap<WaitKey, std::weak_ptr<Waiter>>::iterator entry;
  bool done = false;
};

PodHandlers::PodHandlers(AgentService& service, boost::asio::io_context& io, NetnsId nodeNetns)
    : service_(service), io_(io), nodeNetns_(nodeNetns) {}

void PodHandlers::registerRoutes(server::Router& router) {
  router.add("GET", std::string(api::kSelfPath),
             [this](const server::HttpRequest& request, const server::PathParams&,
                    server::Responder respond) { answer(request, {}, std::move(respond)); });
  router.add("GET", std::string(api::kSelfEnvPath),
             [this](const server::HttpRequest& request, const server::PathParams&,
                    server::Responder respond) {
               answer(request, {.kind = Query::Kind::kEnv, .portName = {}}, std::move(respond));
             });
  router.add("GET", std::string(api::kSelfPortsPath) + "/{name}",
             [this](const server::HttpRequest& request, const server::PathParams& params,
                    server::Responder respond) {
               answer(request, {.kind = Query::Kind::kPort, .portName = params.at("name")},
                      std::move(respond));
             });
}

void PodHandlers::answer(const server::HttpRequest& request, Query query,
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
  auto caller = callerPod(peer, nodeNetns_);
  if (!caller) return respond(refuse(caller.error(), peer));
  if (tryAnswer(request, query, *caller, respond)) return;
  if (wait.count() == 0) {
    return respond(refuse({kNoLease, whyNoLease(*caller) + " (?wait=10s waits for it)"}, peer));
  }
  // Waiting is for a sandbox whose ADD has not finished: a netns no sandbox will ever have (one
  // the caller made itself) has nothing to wait for, and would hold its connection for nothing.
  // A hostNetwork pod's cgroup is the kubelet's: its lease may come from the pod watch.
  if (std::holds_alternative<SandboxCaller>(*caller)) {
    if (!peer.namespaces) {
      return respond(
          refuse({kUnidentified, "cannot tell who made the caller's network namespace: " +
                                     peer.namespaces.error().message},
                 peer));
    }
    if (const auto never = server::whyNeverASandbox(peer.namespaces->netnsOwner)) {
      return respond(refuse({kNoLease, "no hostport lease holds the caller's " + describe(*caller) +
                                           ", and none ever will: " + *never +
                                           " (a pod's sandbox is made by the container runtime), "
                                           "so there is nothing to wait for"},
                            peer));
    }
  }
  park(request, std::move(query), std::move(*caller), wait, std::move(respond));
}

void PodHandlers::park(const server::HttpRequest& request, Query query, CallerPod caller,
                       std::chrono::milliseconds wait, server::Responder respond) {
  auto waiter = std::make_shared<Waiter>(io_, std::move(caller));
  waiter->request = request;
  waiter->query = std::move(query);
  waiter->respond = std::move(respond);
  waiter->wait = wait;
  waiter->entry = waiters_.emplace(waitKeyOf(waiter->caller), waiter);
  log::event(Component::kServer, Level::kDebug, "server.pod_waiting",
             {{"pid", request.peer->pidText()},
              {"caller", describe(waiter->caller)},
              {"wait_ms", wait.count()}});
  waiter->timer.expires_after(wait);
  waiter->timer.async_wait([this, waiter](boost::system::error_code) {
    if (waiter->done) return;
    finish(*waiter);
    waiter->respond(
        refuse({kNoLease, "no hostport lease came for the caller's " + describe(waiter->caller) +
                              " within wait=" + waitText(waiter->wait)},
               *waiter->request.peer));
  });
  // A client that closes its connection frees it, and its slot, now: not when the wait ends.
  if (request.clientGone) {
    request.clientGone->onGone([this, weak = std::weak_ptr<Waiter>(waiter)] {
      boost::asio::post(io_, [this, weak] {
        const auto waiter = weak.lock();
        if (!waiter || waiter->done) return;
        log::event(
            Component::kServer, Level::kDebug, "server.pod_wait_abandoned",
            {{"pid", waiter->request.peer->pidText()}, {"caller", describe(waiter->caller)}});
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

bool PodHandlers::tryAnswer(const server::HttpRequest& request, const Query& query,
                            const CallerPod& caller, const server::Responder& respond) {
  auto found = leasesOf(service_, caller);
  if (!found) {
    respond(refuse(found.error(), *request.peer));
    return true;
  }
  const std::vector<Lease>& leases = *found;
  if (leases.empty()) return false;
  HttpResponse response;
  switch (query.kind) {
    case Query::Kind::kDocument:
      response = {200, "application/json", api::dumpBody(api::selfBody(leases))};
      break;
    case Query::Kind::kEnv:
      response = {200, "text/plain", api::envText(leases)};
      break;
    case Query::Kind::kPort:
      if (const auto grant = api::namedPort(leases, query.portName)) {
        response = {200, "text/plain", api::portText(*grant)};
      } else {
        response = server::errorResponse(
            404, "not_found",
            "no port named " + quoteText(query.portName) +
                " in this pod's lease (its named ports: " + namedPorts(leases) + ")");
      }
      break;
  }
  // Last, right before the answer leaves: the process that connected must still be the one
  // there, or a recycled pid could read another pod's ports.
  const server::ConnectionPeer& peer = *request.peer;
  if (auto unchanged = peer.process->checkUnchanged(); !unchanged) {
    log::event(Component::kServer, Level::kInfo, "server.pod_caller_gone",
               {{"pid", peer.pidText()}, {"cause", unchanged.error().message}});
    respond(server::errorResponse(
        403, kUnidentified, "the process that connected is gone: " + unchanged.error().message));
    return true;
  }
  respond(std::move(response));
  return true;
}

void PodHandlers::leaseGranted(const Lease& lease) {
  // Its sandbox's callers wait by netns; a hostNetwork pod's by the UID its cgroup carries, which
  // its key holds (a static pod's differs from its mirror's); the callers of a pod's volume socket
  // by the pod's UID. One post for all: this runs on the store's thread for every grant.
  std::vector<WaitKey> keys;
  if (lease.netnsId.known())
    keys.emplace_back(std::pair(lease.netnsId.device, lease.netnsId.inode));
  if (const auto uid = lease.key.hostNetworkPodUid(); !uid.empty()) {
    keys.emplace_back(std::string(uid));
  }
  if (!lease.pod.uid.empty() && std::ranges::find(keys, WaitKey(lease.pod.uid)) == keys.end()) {
    keys.emplace_back(lease.pod.uid);
  }
  if (keys.empty()) return;
  boost::asio::post(io_, [this, keys = std::move(keys)] {
    for (const WaitKey& key : keys) wake(key);
  });
}

void PodHandlers::wake(const WaitKey& key) {
  const auto [first, last] = waiters_.equal_range(key);
  std::vector<std::shared_ptr<Waiter>> woken;
  for (auto it = first; it != last; ++it) {
    if (auto waiter = it->second.lock()) woken.push_back(std::move(waiter));
  }
  for (const auto& waiter : woken) {
    if (waiter->done ||
        !tryAnswer(waiter->request, waiter->query, waiter->caller, waiter->respond)) {
      continue;
    }
    finish(*waiter);
  }
}

}  // namespace hostport::agent::service
