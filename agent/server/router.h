#pragma once
// The command registry, apart from its transport (Kea's base_command_mgr vs unix_command_mgr):
// routes know nothing of sockets, so tests drive them with plain values.

#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "agent/server/http_types.h"

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

/// {"code": code, "message": message} with the given status.
api::HttpResponse errorResponse(unsigned status, std::string_view code, std::string_view message);

}  // namespace hostport::agent::server
