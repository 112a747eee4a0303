#pragma once

#include <functional>
#include <map>
#include <string>
#include <vector>

#include "agent/api/http_response.h"

namespace hostport::agent::server {

/// One request as the server parsed it: what the Router and the handlers see.
struct HttpRequest {
  std::string method;                        // "GET", "POST", ...
  std::string path;                          // as sent, for messages
  std::vector<std::string> segments;         // decoded path segments
  std::map<std::string, std::string> query;  // decoded
  std::string body;
};

/// Completes one request. Call it exactly once, from any thread: handlers that wait for the
/// journal answer from the committer thread.
using Responder = std::function<void(api::HttpResponse)>;

}  // namespace hostport::agent::server
