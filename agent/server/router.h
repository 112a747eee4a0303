#pragma once
// The command registry, apart from its transport (Kea's base_command_mgr vs unix_command_mgr):
// routes know nothing of sockets, so tests drive them with plain values.

#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "agent/server/http_types.h"
#include "common/error.h"

namespace hostport::agent::server {

using PathParams = std::map<std::string, std::string>;

class Router {
 public:
  using Handler = std::function<void(const HttpRequest&, const PathParams&, Responder)>;

  /// `pattern` is a path whose segments are literals or {name} placeholders:
  /// "/v1/attachments/{containerId}/{ifname}".
  void add(std::string method, std::string_view pattern, Handler handler);

  /// Runs the matching handler; 404 for an unknown path, 405 for a known path with another
  /// method, both as our JSON error body.
  void dispatch(const HttpRequest& request, Responder respond) const;

 private:
  struct Route {
    std::string method;
    std::vector<std::string> segments;
    Handler handler;
  };
  std::vector<Route> routes_;
};

/// A request target's path as sent: everything before the query.
inline std::string_view pathOf(std::string_view target) {
  return target.substr(0, target.find('?'));
}

/// The request the router dispatches, from what the HTTP parser read: `path` as sent (without
/// the query), for messages; decoded segments and query (api::parseTarget). kInvalidArgument, as
/// parseTarget, for a target the sessions answer with 400. No peer: the listener adds it.
Result<HttpRequest> makeRequest(std::string method, std::string_view target, std::string body);

/// {"code": code, "message": message} with the given status.
api::HttpResponse errorResponse(unsigned status, std::string_view code, std::string_view message);

}  // namespace hostport::agent::server
