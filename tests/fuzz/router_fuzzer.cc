// An HTTP request as both sockets of the agent read it: Beast's parser with the listeners'
// limits (agent/server/server_limits.h), the framing check (agent/server/http_framing.h),
// server::makeRequest and the router (agent/server/router.h), over the control socket's and the
// pod socket's URL space (agent/api/routes.h, pod_codec.h). Invariants: a request served with a
// Transfer-Encoding had its body read as chunked (the framing the sessions trust is Beast's);
// a target that parses prints back, escaped, to a target that parses to the same segments and
// query; the router answers exactly once, and a handler sees path parameters that are the
// request's own segments; ?wait= is within its bound.

#include <boost/asio/buffer.hpp>
#include <boost/beast/http.hpp>
#include <string>

#include "agent/api/pod_codec.h"
#include "agent/api/routes.h"
#include "agent/server/http_framing.h"
#include "agent/server/router.h"
#include "agent/server/server_limits.h"
#include "common/percent_encoding.h"
#include "tests/fuzz/fuzz_check.h"

namespace {

namespace api = hostport::agent::api;
namespace server = hostport::agent::server;
namespace http = boost::beast::http;

/// The request's target spelled anew from its decoded parts.
std::string targetOf(const server::HttpRequest& request) {
  std::string target;
  for (const auto& segment : request.segments) target += "/" + hostport::percentEncode(segment);
  if (target.empty()) target = "/";
  char separator = '?';
  for (const auto& [name, value] : request.query) {
    target += separator + hostport::percentEncode(name) + "=" + hostport::percentEncode(value);
    separator = '&';
  }
  return target;
}

/// A router over both sockets' paths whose handlers check what they are given.
server::Router makeRouter() {
  server::Router router;
  const auto check = [](const server::HttpRequest& request, const server::PathParams& params,
                        server::Responder respond) {
    for (const auto& [name, value] : params) {
      FUZZ_CHECK(std::ranges::find(request.segments, value) != request.segments.end());
    }
    if (const auto wait = request.query.find(std::string(api::kWaitParameter));
        wait != request.query.end()) {
      if (const auto parsed = api::parseWait(wait->second)) {
        FUZZ_CHECK(parsed->count() >= 0 && *parsed <= api::kMaxPodWait);
      }
    }
    respond({200, "text/plain", "ok"});
  };
  const std::string attachments(api::kAttachmentsPath);
  for (const char* method : {"GET", "POST", "DELETE"}) router.add(method, attachments, check);
  for (const char* method : {"GET", "DELETE"}) {
    router.add(method, attachments + "/{containerId}/{ifname}", check);
  }
  router.add("POST", api::kGcPath, check);
  for (const auto path :
       {api::kPoolsPath, api::kHealthzPath, api::kReadyzPath, api::kMetricsPath, api::kSelfPath}) {
    router.add("GET", path, check);
  }
  router.add("GET", std::string(api::kSelfPortsPath) + "/{name}", check);
  return router;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  static const server::Router router = makeRouter();
  const server::ServerLimits limits;
  http::request_parser<http::string_body> parser;
  parser.body_limit(limits.maxBodyBytes);
  parser.header_limit(static_cast<std::uint32_t>(limits.maxHeaderBytes));
  parser.eager(true);
  boost::asio::const_buffer input(data, size);
  boost::beast::error_code ec;
  while (input.size() > 0 && !parser.is_done()) {
    const auto used = parser.put(input, ec);
    if (ec) return 0;
    input += used;
  }
  if (!parser.is_done()) return 0;
  auto& message = parser.get();
  if (const auto refusal = server::framingRefusal(message.base())) {
    FUZZ_CHECK(refusal->status == 400 || refusal->status == 501);
    return 0;
  }
  FUZZ_CHECK(message.count(http::field::transfer_encoding) == 0 || parser.chunked());
  const std::string_view target(message.target().data(), message.target().size());
  const auto request =
      server::makeRequest(std::string(message.method_string()), target, std::move(message.body()));
  if (!request) return 0;
  // Escaping triples a raw byte, so a target near the length limit may print past it.
  if (const std::string printed = targetOf(*request); printed.size() <= api::kMaxTargetLength) {
    const auto again = server::makeRequest(request->method, printed, "");
    FUZZ_CHECK(again.has_value() && again->segments == request->segments &&
               again->query == request->query);
  }
  int answers = 0;
  router.dispatch(*request, [&answers](api::HttpResponse) { ++answers; });
  FUZZ_CHECK(answers == 1);
  return 0;
}
