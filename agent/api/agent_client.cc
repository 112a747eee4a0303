#include "agent/api/agent_client.h"

#include <sys/un.h>

#include <algorithm>

#include "agent/api/http_errors.h"
#include "agent/api/routes.h"
#include "agent/api/unix_http_exchange.h"
#include "common/quote.h"

namespace hostport::agent::api {
namespace {

using nlohmann::json;

std::string_view methodName(HttpMethod method) {
  switch (method) {
    case HttpMethod::kGet:
      return "GET";
    case HttpMethod::kPost:
      return "POST";
    case HttpMethod::kDelete:
      return "DELETE";
  }
  return "GET";
}

}  // namespace

AgentClient AgentClient::forSocket(std::string path, std::chrono::milliseconds timeout) {
  return AgentClient(std::move(path), timeout);
}

AgentClient& AgentClient::withMaxResponseBytes(std::size_t limit) {
  maxResponseBytes_ = limit;
  return *this;
}

Result<HttpResponse> AgentClient::exchange(HttpMethod method, std::string_view target,
                                           std::string_view body) const {
  if (path_.empty()) return fail(ErrorCode::kInvalidArgument, "agent socket path is empty");
  if (path_.size() >= sizeof(sockaddr_un::sun_path)) {
    return fail(ErrorCode::kInvalidArgument, "agent socket path is longer than " +
                                                 std::to_string(sizeof(sockaddr_un::sun_path) - 1) +
                                                 " bytes: " + path_);
  }
  // Targets are built by us, but a raw CR, LF or space would still split the request line.
  if (target.empty() || target.front() != '/' ||
      !std::ranges::all_of(target, [](char c) { return c > ' ' && c < '\x7f'; })) {
    return fail(ErrorCode::kInvalidArgument,
                "request target " + quoteText(target) + " must be a path of printable characters");
  }
  const HttpExchange request{methodName(method), target,
                             method == HttpMethod::kPost ? "application/json" : "", body};
  return exchangeOverUnixSocket(path_, request, timeout_, maxResponseBytes_);
}

Error AgentClient::invalidAnswer(std::string_view target, const Error& error) const {
  return Error{ErrorCode::kInternal,
               "hostport-agent at " + path_ + " sent an invalid answer to " + std::string(target) +
                   ": " + error.message,
               error.details};
}

Result<json> AgentClient::call(HttpMethod method, std::string_view target,
                               std::string_view body) const {
  if (body.size() > kMaxRequestBytes) {
    return fail(ErrorCode::kInvalidArgument,
                std::string(methodName(method)) + " " + std::string(target) + ": a body of " +
                    std::to_string(body.size()) + " bytes exceeds the control socket's limit of " +
                    std::to_string(kMaxRequestBytes) + " bytes");
  }
  HOSTPORT_TRY(const HttpResponse response, exchange(method, target, body));
  if (response.status < 200 || response.status > 299) {
    return std::unexpected(errorFromBody(response.status, response.body));
  }
  auto document = parseBody(response.body, maxResponseBytes_);
  if (!document) return std::unexpected(invalidAnswer(target, document.error()));
  return std::move(*document);
}

Result<Lease> AgentClient::allocate(const AllocationRequest& request) const {
  const std::string target(kAttachmentsPath);
  HOSTPORT_TRY(const json body, call(HttpMethod::kPost, target, dumpBody(toJson(request))));
  auto lease = leaseFromJson(body);
  if (!lease) return std::unexpected(invalidAnswer(target, lease.error()));
  return std::move(*lease);
}

Result<std::optional<Lease>> AgentClient::get(const AttachmentKey& key) const {
  const std::string target = attachmentTarget(key);
  auto body = call(HttpMethod::kGet, target);
  if (!body) {
    if (body.error().code == ErrorCode::kNotFound) return std::optional<Lease>();
    return std::unexpected(std::move(body.error()));
  }
  auto lease = leaseFromJson(*body);
  if (!lease) return std::unexpected(invalidAnswer(target, lease.error()));
  return std::optional<Lease>(std::move(*lease));
}

Result<std::optional<Lease>> AgentClient::release(const AttachmentKey& key) const {
  const std::string target = attachmentTarget(key);
  HOSTPORT_TRY(const json body, call(HttpMethod::kDelete, target));
  auto released = releasedFromJson(body);
  if (!released) return std::unexpected(invalidAnswer(target, released.error()));
  return std::move(*released);
}

Result<std::vector<Lease>> AgentClient::releaseContainer(std::string_view containerId) const {
  const std::string target = containerTarget(containerId);
  HOSTPORT_TRY(const json body, call(HttpMethod::kDelete, target));
  auto leases = leaseListFromJson(body, "released");
  if (!leases) return std::unexpected(invalidAnswer(target, leases.error()));
  return std::move(*leases);
}

Result<std::vector<Lease>> AgentClient::list(std::string_view namespaceName,
                                             std::string_view podName) const {
  const std::string target = listTarget(namespaceName, podName);
  HOSTPORT_TRY(const json body, call(HttpMethod::kGet, target));
  auto leases = leaseListFromJson(body, "leases");
  if (!leases) return std::unexpected(invalidAnswer(target, leases.error()));
  return std::move(*leases);
}

Result<std::vector<Lease>> AgentClient::gc(const GcRequest& request) const {
  const std::string target(kGcPath);
  HOSTPORT_TRY(const json body, call(HttpMethod::kPost, target, dumpBody(gcRequestBody(request))));
  auto leases = leaseListFromJson(body, "released");
  if (!leases) return std::unexpected(invalidAnswer(target, leases.error()));
  return std::move(*leases);
}

Result<json> AgentClient::pools() const {
  const std::string target(kPoolsPath);
  HOSTPORT_TRY(json body, call(HttpMethod::kGet, target));
  if (auto rows = poolsFromJson(body); !rows) {
    return std::unexpected(invalidAnswer(target, rows.error()));
  }
  return body;
}

Result<std::vector<PoolUsageRow>> AgentClient::poolUsage() const {
  const std::string target(kPoolsPath);
  HOSTPORT_TRY(const json body, call(HttpMethod::kGet, target));
  auto rows = poolsFromJson(body);
  if (!rows) return std::unexpected(invalidAnswer(target, rows.error()));
  return std::move(*rows);
}

Result<std::string> AgentClient::getText(std::string_view target) const {
  HOSTPORT_TRY(HttpResponse response, exchange(HttpMethod::kGet, target));
  if (response.status < 200 || response.status > 299) {
    return std::unexpected(errorFromBody(response.status, response.body));
  }
  return std::move(response.body);
}

}  // namespace hostport::agent::api
