#pragma once
// What the pod socket answers (agent/api/pod_api.h): a caller's own pod, found by the network
// namespace the kernel says it is in, and nothing else.
//
// Every answer goes through the same gate: the caller was identified at accept
// (server::ConnectionPeer), its netns is not the node's, a lease holds that netns, and, checked
// last, right before the answer is written, the process held since accept still runs with the
// start time it had (PeerProcess::checkUnchanged()). A caller that fails any of these gets 403
// with the reason and no lease data. The check comes last because a request may wait
// (?wait=): the process must be the one that connected when the answer leaves, not only when the
// request arrived.
//
// Waiting: a request whose netns holds no lease yet parks as a Waiter on the pod socket's
// io_context with a timer; AgentService::watchLeases() posts each durable grant there, which
// wakes the waiters of its netns. Lookups and wake-ups run on that io_context's one thread, so a
// grant can neither slip between a lookup and the park nor wake a waiter twice.

#include <boost/asio/io_context.hpp>
#include <map>
#include <memory>
#include <utility>

#include "agent/server/router.h"
#include "agent/service/agent_service.h"

namespace hostport::agent::service {

class PodApi {
 public:
  /// `nodeNetns`: the agent's own netns, where a caller is a node process or a hostNetwork pod.
  PodApi(AgentService& service, boost::asio::io_context& io, NetnsId nodeNetns);
  PodApi(const PodApi&) = delete;
  PodApi& operator=(const PodApi&) = delete;

  /// GET /v1/self and GET /v1/self/ports/{name}, and nothing else.
  void registerRoutes(server::Router& router);

  /// AgentService::watchLeases()' `granted` observer, from any thread: wakes the requests waiting
  /// for `lease`'s netns.
  void leaseGranted(const Lease& lease);

 private:
  struct Waiter;
  using NetnsKey = std::pair<uint64_t, uint64_t>;

  void answer(const server::HttpRequest& request, const std::string& portName,
              server::Responder respond);
  /// Answers from the leases of `netns` if there are any; false (nothing answered) otherwise.
  bool tryAnswer(const server::HttpRequest& request, const std::string& portName,
                 const NetnsId& netns, const server::Responder& respond);
  void wake(const NetnsId& netns);

  AgentService& service_;
  boost::asio::io_context& io_;
  NetnsId nodeNetns_;
  std::multimap<NetnsKey, std::weak_ptr<Waiter>> waiters_;  // the io_context's thread only
};

}  // namespace hostport::agent::service
