#pragma once
// The control socket's address and URL space, shared by the agent (which listens and routes) and
// its clients, the CNI plugin and hostportctl (which connect and build targets), so all of them
// meet at the same default path and escape and unescape the same way.
//
//   POST   /v1/attachments                         request -> lease
//   GET    /v1/attachments/{containerId}/{ifname}  -> lease, or 404 not_found
//   DELETE /v1/attachments/{containerId}/{ifname}  -> {"released": lease|null}
//   GET    /v1/attachments?namespace=&pod=          -> {"leases": [...]}
//   DELETE /v1/attachments?containerId=X            -> {"released": [...]} (every ifname)
//   POST   /v1/gc        {"network", "valid": [key...]} -> {"released": [...]}
//          (the network's leases not in "valid"; an empty "valid" is refused while the network
//          holds leases, unless the agent runs with --allow-empty-gc: agent_service.h)
//   GET    /v1/pools                                -> {"pools": [...]}
//   GET    /healthz, /readyz, /metrics              -> text

#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "common/error.h"
#include "lease/lease.h"

namespace hostport::agent::api {

/// Where the agent listens and its clients connect unless configured otherwise.
inline constexpr std::string_view kDefaultAgentSocket = "/run/hostport/agent.sock";

inline constexpr std::string_view kAttachmentsPath = "/v1/attachments";
inline constexpr std::string_view kGcPath = "/v1/gc";
inline constexpr std::string_view kPoolsPath = "/v1/pools";
inline constexpr std::string_view kHealthzPath = "/healthz";
inline constexpr std::string_view kReadyzPath = "/readyz";
inline constexpr std::string_view kMetricsPath = "/metrics";
inline constexpr std::size_t kMaxTargetLength = 2048;

/// "/v1/attachments/{containerId}/{ifname}", each segment escaped (an ifname may hold '%', '?').
std::string attachmentTarget(const AttachmentKey& key);
/// "/v1/attachments?namespace=..&pod=..", leaving out empty filters.
std::string listTarget(std::string_view namespaceName, std::string_view podName);
/// "/v1/attachments?containerId=..".
std::string containerTarget(std::string_view containerId);

/// A request target split for routing: decoded path segments and query parameters.
struct Target {
  std::vector<std::string> segments;  // "/v1/attachments/a/b" -> {"v1", "attachments", "a", "b"}
  std::map<std::string, std::string, std::less<>> query;
};

/// kInvalidArgument for a target that is not origin-form ("/..."), longer than kMaxTargetLength,
/// holds a bad escape, an empty segment, or a repeated query parameter.
Result<Target> parseTarget(std::string_view target);

}  // namespace hostport::agent::api
