#pragma once
// The JSON bodies of the control socket. Encoding is total; decoding never throws, checks the
// type and grammar of every field and bounds every count, because the agent decodes requests
// from anything that can open the socket and the plugin decodes what the agent answers.
//
// Conventions, on both sides: field names are lowerCamel; a missing key and JSON null mean the
// same (absent); unknown keys are ignored, so a newer peer can add fields. Errors are
// kInvalidArgument and name the field by path and the value, e.g.
// `dynamic[2].containerPort: 70000 must be an integer 1..65535`; a body that is not JSON is
// kDecode.

#include <cstdint>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "common/error.h"
#include "common/identifiers.h"
#include "lease/lease.h"

namespace hostport::agent::api {

inline constexpr std::size_t kMaxGcKeys = 65536;
/// The longest attachment key in a GC list, and the comma after it:
/// {"containerId":"<100 characters>","ifname":"<15>"} (or "containerID", as the CNI GC input
/// spells it). Both grammars (common/identifiers.h) hold only characters JSON writes as
/// themselves.
inline constexpr std::size_t kMaxGcKeyJsonBytes =
    sizeof(R"({"containerId":"","ifname":""},)") - 1 + kMaxContainerIdLength + kMaxIfnameLength;
/// POST /v1/gc with kMaxGcKeys of the longest keys and the longest network name.
inline constexpr std::size_t kMaxGcBodyBytes = kMaxGcKeys * kMaxGcKeyJsonBytes +
                                               sizeof(R"({"network":"","valid":[]})") +
                                               kMaxNetworkNameLength;
/// The largest request body of the control socket, the one limit of both sides: the agent's
/// sessions answer a larger one 413 and its parser refuses it; the client refuses to send it. It is
/// sized for the largest GC, the largest request there is, rounded up to a whole MiB (10 MiB).
inline constexpr std::size_t kMaxRequestBytes = ((kMaxGcBodyBytes >> 20) + 1) << 20;
inline constexpr int kMaxNestingDepth = 32;
inline constexpr std::size_t kMaxPoolRanges = 1024;

/// One row of GET /v1/pools.
/// Ports of a pool that one namespace's leases hold ("" for pods without a namespace).
struct NamespaceUsageRow {
  std::string name;
  uint32_t used = 0;
  friend bool operator==(const NamespaceUsageRow&, const NamespaceUsageRow&) = default;
};

/// A pool in GET /v1/pools: usage, and the rules of agent/core/pool_rules.h under "rules"
/// (absent when the pool has none), with the usage per namespace they count.
struct PoolUsageRow {
  std::string name;
  uint32_t size = 0;
  uint32_t used = 0;
  uint32_t free = 0;
  std::string strategy;  // "lowest", "random", "round-robin"
  std::vector<PortRange> ranges;
  std::vector<std::string> namespaces;  // the allow list; empty: every namespace
  std::optional<uint32_t> maxPortsPerNamespace;
  std::optional<uint32_t> maxPortsPerPod;
  std::vector<NamespaceUsageRow> namespaceUsage;  // by name
  friend bool operator==(const PoolUsageRow&, const PoolUsageRow&) = default;
};

/// Parses a body without throwing: kDecode when it is larger than maxBytes, nested deeper than
/// kMaxNestingDepth, or not JSON.
Result<nlohmann::json> parseBody(std::string_view body, std::size_t maxBytes = kMaxRequestBytes);
/// Serialises without throwing: invalid UTF-8 in a string is replaced, not an exception.
std::string dumpBody(const nlohmann::json& body);

// {"containerId", "ifname"}
nlohmann::json toJson(const AttachmentKey& key);
Result<AttachmentKey> attachmentKeyFromJson(const nlohmann::json& value);

// {"namespace", "name", "uid"}; every field may be empty (a pod outside Kubernetes).
nlohmann::json toJson(const PodIdentity& pod);
Result<PodIdentity> podIdentityFromJson(const nlohmann::json& value);

// {"containerId", "ifname", "pod", "netns", "pool",
//  "static": [{"hostPort", "containerPort", "protocol", "hostIP"}],
//  "dynamic": [{"name", "containerPort", "count", "protocol"}],
//  "forwarding": {"network", "podIPs": ["10.88.0.5/16", "fd00::5/64"], "snat", "masqAll",
//                 "conditionsV4", "conditionsV6"}}
// containerId and ifname are required; pod, netns, pool, static, dynamic and forwarding may be
// absent; protocol defaults to tcp and count to 1. hostIP "" or unspecified (0.0.0.0, ::) means
// any. In forwarding, podIPs holds at most one address per family, each one a pod may have
// (common/pod_address.h), and at least one when static or dynamic asks for a port; snat defaults
// to true. A lease's forwarding is read as recorded.
nlohmann::json toJson(const AllocationRequest& request);
Result<AllocationRequest> allocationRequestFromJson(const nlohmann::json& value);

// {"containerId", "ifname", "pod", "netns", "pool",
//  "ports": [{"name", "protocol", "hostPort", "containerPort", "count", "hostIP"?, "static"}],
//  "forwarding"?: as in the request}
nlohmann::json toJson(const PortGrant& grant);
nlohmann::json toJson(const Lease& lease);
Result<Lease> leaseFromJson(const nlohmann::json& value);

// {"name", "size", "used", "free", "strategy", "ranges": ["30000-32767"]}
nlohmann::json toJson(const PoolUsageRow& row);
Result<PoolUsageRow> poolUsageRowFromJson(const nlohmann::json& value);

// Whole bodies of the endpoints.
/// POST /v1/gc request: one CNI network's GC, {"network": "kube", "valid": [key...]}. Both are
/// required: without "valid" a GC would read as "nothing is valid", and without "network" it would
/// reach the leases of every network. network keeps libcni's name grammar (common/identifiers.h).
struct GcRequest {
  std::string network;               // only leases whose forwarding names it are collected
  std::vector<AttachmentKey> valid;  // the attachments the runtime still has on that network
  friend bool operator==(const GcRequest&, const GcRequest&) = default;
};
nlohmann::json gcRequestBody(const GcRequest& request);
Result<GcRequest> gcRequestFromJson(const nlohmann::json& body);
/// {"<member>": [lease...]}: "leases" for a list, "released" for GC and release-by-container.
nlohmann::json leaseListBody(std::string_view member, const std::vector<Lease>& leases);
Result<std::vector<Lease>> leaseListFromJson(const nlohmann::json& body, std::string_view member);
/// DELETE /v1/attachments/{containerId}/{ifname} answer: {"released": lease or null}.
nlohmann::json releasedBody(const std::optional<Lease>& lease);
Result<std::optional<Lease>> releasedFromJson(const nlohmann::json& body);
/// GET /v1/pools answer: {"pools": [row...]}.
nlohmann::json poolsBody(const std::vector<PoolUsageRow>& rows);
Result<std::vector<PoolUsageRow>> poolsFromJson(const nlohmann::json& body);

}  // namespace hostport::agent::api
