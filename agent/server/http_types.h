#pragma once

#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <utility>
#include <vector>

#include "agent/api/http_response.h"
#include "agent/server/peer_process.h"

namespace hostport::agent::server {

/// Tells a handler that holds a request for long (the pod socket's ?wait=) that its client has
/// gone. The session watches the connection while a request is held and, on the end of the stream
/// or an error, calls fire() on its executor; the handler then answers at once (the session drops
/// the answer), so the connection and its slot are freed now rather than when the wait ends.
class ClientGone {
 public:
  /// Sets the hook that fire() runs, once; runs it at once if the client has gone already.
  /// An empty hook clears it.
  void onGone(std::function<void()> hook) {
    std::unique_lock lock(mutex_);
    if (!gone_) {
      hook_ = std::move(hook);
      return;
    }
    lock.unlock();
    if (hook) hook();
  }
  /// The session's: the client has gone.
  void fire() {
    std::function<void()> hook;
    {
      std::lock_guard lock(mutex_);
      if (gone_) return;
      gone_ = true;
      hook = std::exchange(hook_, nullptr);
    }
    if (hook) hook();
  }

 private:
  std::mutex mutex_;  // fired on the session's executor, set on the handler's
  std::function<void()> hook_;
  bool gone_ = false;
};

/// One request as the server parsed it: what the Router and the handlers see.
struct HttpRequest {
  std::string method;                        // "GET", "POST", ...
  std::string path;                          // as sent, for messages
  std::vector<std::string> segments;         // decoded path segments
  std::map<std::string, std::string> query;  // decoded
  std::string body;
  /// The caller, on a listener that identifies its callers (the pod socket); null elsewhere.
  std::shared_ptr<const ConnectionPeer> peer;
  /// Set by the sessions for each request they dispatch; null for requests made elsewhere.
  std::shared_ptr<ClientGone> clientGone;
};

/// Completes one request. Call it exactly once, from any thread: handlers that wait for the
/// journal answer from the committer thread.
using Responder = std::function<void(api::HttpResponse)>;

/// Decides at accept who a connection's caller is, and whether it is served: null closes the
/// connection at once (a per-caller cap), anything else goes with each of its requests
/// (HttpRequest::peer) and is dropped with the connection. Empty: callers are not identified.
using AdmitPeer = std::function<std::shared_ptr<const ConnectionPeer>(int socketFd)>;

}  // namespace hostport::agent::server
