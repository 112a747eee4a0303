#include "agent/server/router.h"

#include <nlohmann/json.hpp>

#include "agent/api/routes.h"

namespace hostport::agent::server {
namespace {

std::vector<std::string> splitPath(std::string_view path) {
  std::vector<std::string> segments;
  std::size_t start = 0;
  while (start <= path.size()) {
    const auto slash = path.find('/', start);
    const auto end = slash == std::string_view::npos ? path.size() : slash;
    if (end > start) segments.emplace_back(path.substr(start, end - start));
    if (slash == std::string_view::npos) break;
    start = slash + 1;
  }
  return segments;
}

}  // namespace

void Router::add(std::string method, std::string_view pattern, Handler handler) {
  routes_.push_back({std::move(method), splitPath(pattern), std::move(handler)});
}

void Router::dispatch(const HttpRequest& request, Responder respond) const {
  const auto& segments = request.segments;
  bool pathKnown = false;
  for (const auto& route : routes_) {
    if (route.segments.size() != segments.size()) continue;
    PathParams params;
    bool matches = true;
    for (std::size_t i = 0; i < segments.size() && matches; ++i) {
      const auto& expected = route.segments[i];
      if (expected.size() > 2 && expected.front() == '{' && expected.back() == '}') {
        params[expected.substr(1, expected.size() - 2)] = segments[i];
      } else {
        matches = expected == segments[i];
      }
    }
    if (!matches) continue;
    pathKnown = true;
    if (route.method != request.method) continue;
    route.handler(request, params, std::move(respond));
    return;
  }
  if (pathKnown) {
    respond(errorResponse(405, "method_not_allowed",
                          request.method + " is not allowed on " + request.path));
  } else {
    respond(errorResponse(404, "not_found", "no endpoint " + request.path));
  }
}

Result<HttpRequest> makeRequest(std::string method, std::string_view target, std::string body) {
  HOSTPORT_TRY(auto parsed, api::parseTarget(target));
  HttpRequest request;
  request.method = std::move(method);
  request.path = std::string(pathOf(target));
  request.segments = std::move(parsed.segments);
  request.query.insert(parsed.query.begin(), parsed.query.end());
  request.body = std::move(body);
  return request;
}

api::HttpResponse errorResponse(unsigned status, std::string_view code, std::string_view message) {
  const nlohmann::json body = {{"code", code}, {"message", message}};
  return {status, "application/json",
          body.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace)};
}

}  // namespace hostport::agent::server
