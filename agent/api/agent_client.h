#pragma once
// A small blocking HTTP/1.1 client for the agent's control socket, used by the CNI plugin and
// hostportctl. One connection per call (the plugin makes one or two calls per run), and one
// deadline per call covering connect, write and read, so a wedged agent can never hang a
// runtime's CNI ADD. Never throws.
//
// Errors:
//  - kUnavailable: the socket is missing, refuses, times out or drops the connection; the message
//    names the socket path ("hostport-agent is not reachable at /run/hostport/agent.sock:
//    connection refused"). The plugin maps it to CNI code 11 (try again later).
//  - the agent's own ErrorCode and message for an HTTP error body (see http_errors.h);
//  - kInternal: a response that is not HTTP, larger than the limit, or not the expected JSON.
//  - kInvalidArgument: an empty or too long socket path, or a request body over kMaxRequestBytes
//    (json_codec.h), the agent's limit too, which the client refuses to send. The agent's own 413,
//    "... exceeds the limit of N bytes", comes back as kInvalidArgument.

#include <chrono>
#include <cstddef>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "agent/api/json_codec.h"
#include "agent/api/routes.h"  // kDefaultAgentSocket, for the client's callers
#include "agent/api/unix_http_exchange.h"
#include "common/error.h"
#include "lease/lease.h"

namespace hostport::agent::api {

inline constexpr std::chrono::milliseconds kDefaultClientTimeout{10'000};
inline constexpr std::size_t kDefaultMaxResponseBytes = 8 * 1024 * 1024;

enum class HttpMethod { kGet, kPost, kDelete };

class AgentClient {
 public:
  static AgentClient forSocket(std::string path,
                               std::chrono::milliseconds timeout = kDefaultClientTimeout);
  /// Answers larger than this (headers excluded) fail with kInternal.
  AgentClient& withMaxResponseBytes(std::size_t limit);

  const std::string& socketPath() const { return path_; }
  std::chrono::milliseconds timeout() const { return timeout_; }

  /// POST /v1/attachments. The same key again returns the same lease (ADD is idempotent).
  Result<Lease> allocate(const AllocationRequest& request) const;
  /// GET /v1/attachments/{containerId}/{ifname}; nullopt when the agent holds no such lease.
  Result<std::optional<Lease>> get(const AttachmentKey& key) const;
  /// DELETE /v1/attachments/{containerId}/{ifname}; nullopt when there was nothing to release.
  Result<std::optional<Lease>> release(const AttachmentKey& key) const;
  /// DELETE /v1/attachments?containerId=X: releases every ifname of the container.
  Result<std::vector<Lease>> releaseContainer(std::string_view containerId) const;
  /// GET /v1/attachments?namespace=&pod=; empty filters match everything.
  Result<std::vector<Lease>> list(std::string_view namespaceName, std::string_view podName) const;
  /// POST /v1/gc: releases the leases of `request.network` whose key is not in `request.valid`;
  /// returns what was released.
  Result<std::vector<Lease>> gc(const GcRequest& request) const;
  /// GET /v1/pools as the agent sent it ({"pools": [...]}), after checking it decodes.
  Result<nlohmann::json> pools() const;
  /// GET /v1/pools, typed.
  Result<std::vector<PoolUsageRow>> poolUsage() const;
  /// GET of a text endpoint (/metrics, /healthz, /readyz): the body of a 2xx answer.
  Result<std::string> getText(std::string_view target) const;

  /// The raw exchange behind every call: any status is a success here; only transport and
  /// HTTP syntax failures are errors.
  Result<HttpResponse> exchange(HttpMethod method, std::string_view target,
                                std::string_view body = {}) const;

 private:
  AgentClient(std::string path, std::chrono::milliseconds timeout)
      : path_(std::move(path)), timeout_(timeout) {}

  /// Exchanges and wants a 2xx JSON answer; other statuses become the agent's error.
  Result<nlohmann::json> call(HttpMethod method, std::string_view target,
                              std::string_view body = {}) const;
  Error invalidAnswer(std::string_view target, const Error& error) const;

  std::string path_;
  std::chrono::milliseconds timeout_;
  std::size_t maxResponseBytes_ = kDefaultMaxResponseBytes;
};

}  // namespace hostport::agent::api
