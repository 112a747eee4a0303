#include "agent/api/agent_probe.h"

#include "common/quote.h"

namespace hostport::agent::api {
namespace {

/// The body as a person reads it in one line: trailing newlines dropped, the rest quoted.
std::string oneLine(std::string_view body) {
  while (!body.empty() && (body.back() == '\n' || body.back() == '\r')) body.remove_suffix(1);
  return body.empty() ? "(empty)" : quoteText(body);
}

}  // namespace

Result<void> probeAgent(const AgentClient& client, std::string_view target) {
  HOSTPORT_TRY(const HttpResponse response, client.exchange(HttpMethod::kGet, target));
  if (response.status == 200) return {};
  return fail(ErrorCode::kConflict, "GET " + std::string(target) + " answered " +
                                        std::to_string(response.status) + ": " +
                                        oneLine(response.body));
}

}  // namespace hostport::agent::api
