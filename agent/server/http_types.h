#pragma once

#include <functional>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "agent/api/http_response.h"
#include "agent/server/peer_process.h"

namespace hostport::agent::server {

/// One request as the server parsed it: what the Router and the handlers see.
struct HttpRequest {
  std::string method;                        // "GET", "POST", ...
  std::string path;                          // as sent, for messages
  std::vector<std::string> segments;         // decoded path segments
  std::map<std::string, std::string> query;  // decoded
  std::string body;
  /// The caller, on a listener that identifies its callers (the pod socket); null elsewhere.
  std::shared_ptr<const ConnectionPeer> peer;
};

/// Completes one request. Call it exactly once, from any thread: handlers that wait for the
/// journal answer from the committer thread.
using Responder = std::function<void(api::HttpResponse)>;

/// Decides at accept who a connection's caller is, and whether it is served: null closes the
/// connection at once (a per-caller cap), anything else goes with each of its requests
/// (HttpRequest::peer) and is dropped with the connection. Empty: callers are not identified.
using AdmitPeer = std::function<std::shared_ptr<const ConnectionPeer>(int socketFd)>;

}  // namespace hostport::agent::server
