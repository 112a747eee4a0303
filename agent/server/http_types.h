#pragma once

#include <functional>
#include <map>
#include <string>
#include <vector>

namespace hostport::agent {

struct HttpRequest {
  std::string method;                        // "GET", "POST", ...
  std::string path;                          // as sent, for messages
  std::vector<std::string> segments;         // decoded path segments
  std::map<std::string, std::string> query;  // decoded
  std::string body;
};

struct HttpResponse {
  unsigned status = 200;
  std::string contentType = "application/json";
  std::string body;
};

/// Completes one request. Call it exactly once, from any thread: handlers that wait for the
/// journal answer from the committer thread.
using Responder = std::function<void(HttpResponse)>;

}  // namespace hostport::agent
