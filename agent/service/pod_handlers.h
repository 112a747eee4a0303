#pragma once
// What the pod socket answers (agent/api/pod_codec.h): a caller's own pod, found by the network
// namespace the kernel says it is in, or for a hostNetwork pod by its cgroup (caller_pod.h), and
// nothing else.
//
// Every answer goes through the same gate: the caller was identified at accept
// (server::ConnectionPeer), it is a pod (callerPod()), a lease is that pod's (leasesOf()), and,
// checked last, right before the answer is written, the process held since accept still runs
// with the start time it had (PeerProcess::checkUnchanged()). A caller that fails any of these
// gets 403 with the reason and no lease data. The check comes last because a request may wait
// (?wait=): the process must be the one that connected when the answer leaves, not only when the
// request arrived.
//
// Waiting: a request whose pod holds no lease yet parks as a Waiter on the pod socket's
// io_context with a timer; AgentService::watchLeases() posts each durable grant there, which
// wakes the waiters of its netns, or of its hostNetwork pod. Lookups and wake-ups run on that
// io_context's one thread, so a grant can neither slip between a lookup and the park nor wake a
// waiter twice. Only a netns that a pod sandbox could have may wait (server::whyNeverASandbox():
// not one the caller made itself), and a waiter whose client closes its connection is let go at
// once (server::ClientGone), so the connection's slot is free again.

#include <boost/asio/io_context.hpp>
#include <chrono>
#include <map>
#include <memory>
#include <string>
#include <utility>
#include <variant>

#include "agent/server/router.h"
#include "agent/service/agent_service.h"
#include "agent/service/caller_pod.h"

namespace hostport::agent::service {

class PodHandlers {
 public:
  /// `nodeNetns`: the agent's own netns, where a caller is a node process or a hostNetwork pod.
  PodHandlers(AgentService& service, boost::asio::io_context& io, NetnsId nodeNetns);
  PodHandlers(const PodHandlers&) = delete;
  PodHandlers& operator=(const PodHandlers&) = delete;

  /// GET /v1/self, GET /v1/self/env and GET /v1/self/ports/{name}, and nothing else.
  void registerRoutes(server::Router& router);

  /// AgentService::watchLeases()' `granted` observer, from any thread: wakes the requests waiting
  /// for `lease`'s netns, or for its hostNetwork pod.
  void leaseGranted(const Lease& lease);

  /// What a waiter waits for: a netns (device, inode), or a pod's UID (a hostNetwork pod, or the
  /// pod whose CSI volume holds the socket called).
  using WaitKey = std::variant<std::pair<uint64_t, uint64_t>, std::string>;

  /// What a request asks of its pod's leases: the document, the env file, or one port.
  struct Query {
    enum class Kind : uint8_t { kDocument, kEnv, kPort };
    Kind kind = Kind::kDocument;
    std::string portName;  // kPort's
  };

 private:
  struct Waiter;

  void answer(const server::HttpRequest& request, Query query, server::Responder respond);
  /// Parks `request` until a lease of `caller` comes, `wait` passes or its client goes.
  void park(const server::HttpRequest& request, Query query, CallerPod caller,
            std::chrono::milliseconds wait, server::Responder respond);
  /// Ends a waiter's wait: out of the index, its timer and client watch cancelled.
  void finish(Waiter& waiter);
  /// Answers from the caller's leases, or refuses; false (nothing answered) while it has none.
  bool tryAnswer(const server::HttpRequest& request, const Query& query, const CallerPod& caller,
                 const server::Responder& respond);
  void wake(const WaitKey& key);

  AgentService& service_;
  boost::asio::io_context& io_;
  NetnsId nodeNetns_;
  std::multimap<WaitKey, std::weak_ptr<Waiter>> waiters_;  // the io_context's thread only
};

}  // namespace hostport::agent::service
