#include "agent/api/json_codec.h"

#include <limits>
#include <set>

#include "agent/api/attachment_key.h"
#include "common/bounded_json.h"
#include "common/identifiers.h"
#include "common/json_fields.h"
#include "common/pod_address.h"
#include "common/quote.h"

namespace hostport::agent::api {
namespace {

using nlohmann::json;

constexpr uint32_t kMaxPort = 65535;

Result<void> requireObject(const json& value, std::string_view path) {
  if (value.is_object()) return {};
  return invalidValue(path.empty() ? "body" : path, value, "must be a JSON object");
}

/// One of common/identifiers.h's grammars, as its problem text.
using Grammar = Problem (*)(std::string_view);

/// An optional string may be absent or empty; a required one must be present and match.
Result<std::string> stringField(const json& object, std::string_view path, std::string_view key,
                                bool required, Grammar grammar) {
  const JsonField field = jsonField(object, path, key);
  HOSTPORT_TRY(std::string text, required ? readString(field) : readString(field, ""));
  if (text.empty() && !required) return text;
  if (const Problem problem = grammar(text)) return invalidValue(field, *problem);
  return text;
}

Result<uint32_t> integerField(const json& object, std::string_view path, std::string_view key,
                              uint32_t min, uint32_t max) {
  HOSTPORT_TRY(const uint64_t number, readInteger(jsonField(object, path, key), min, max));
  return static_cast<uint32_t>(number);
}

Result<uint16_t> portField(const json& object, std::string_view path, std::string_view key) {
  return readPort(jsonField(object, path, key));
}

Result<uint16_t> countField(const json& object, std::string_view path) {
  HOSTPORT_TRY(const uint64_t count,
               readInteger(jsonField(object, path, "count"), 1, kMaxRangeWidth, 1));
  return static_cast<uint16_t>(count);
}

Result<PortProtocol> protocolField(const json& object, std::string_view path) {
  return readProtocolWith(jsonField(object, path, "protocol"), parsePortProtocol,
                          "tcp, udp, sctp or tcpudp");
}

Result<std::optional<IpAddress>> hostIpField(const json& object, std::string_view path) {
  return readHostIp(jsonField(object, path, "hostIP"));
}

Result<bool> boolField(const json& object, std::string_view path, std::string_view key) {
  return readBool(jsonField(object, path, key), false);
}

/// The array at object[key]; an empty array when absent unless required.
Result<const json*> arrayField(const json& object, std::string_view path, std::string_view key,
                               bool required, std::size_t maxSize) {
  const JsonField field = jsonField(object, path, key);
  return required ? readArray(field, maxSize) : readArrayOrEmpty(field, maxSize);
}

/// A row of `count` ports from `first` must end at 65535 at the latest.
Result<void> checkRangeEnd(std::string_view path, std::string_view key, uint16_t first,
                           uint16_t count) {
  if (static_cast<uint32_t>(first) + count - 1 <= kMaxPort) return {};
  return fail(ErrorCode::kInvalidArgument, std::string(path) + ": " + std::string(key) + " " +
                                               std::to_string(first) + " with count " +
                                               std::to_string(count) + " runs past 65535");
}

/// Both fields must be strings before either meets its grammar (api/attachment_key.h).
Result<AttachmentKey> attachmentKeyAt(const json& value, std::string_view path) {
  HOSTPORT_TRY_VOID(requireObject(value, path));
  HOSTPORT_TRY(std::string containerId, readString(jsonField(value, path, "containerId")));
  HOSTPORT_TRY(std::string ifname, readString(jsonField(value, path, "ifname")));
  return checkAttachmentKey({std::move(containerId), std::move(ifname)}, path);
}

Result<PodIdentity> podIdentityAt(const json& value, std::string_view path) {
  HOSTPORT_TRY_VOID(requireObject(value, path));
  PodIdentity pod;
  HOSTPORT_TRY(pod.namespaceName, stringField(value, path, "namespace", false, dnsLabelProblem));
  HOSTPORT_TRY(pod.name, stringField(value, path, "name", false, dnsSubdomainProblem));
  HOSTPORT_TRY(pod.uid, stringField(value, path, "uid", false, podUidProblem));
  return pod;
}

/// The fields a request and a lease share: key, pod, netns, pool.
struct Header {
  AttachmentKey key;
  PodIdentity pod;
  std::string netns;
  std::string pool;
};

Result<Header> headerAt(const json& value, std::string_view path) {
  Header header;
  HOSTPORT_TRY(header.key, attachmentKeyAt(value, path));
  if (const json* pod = jsonMember(value, "pod"); pod != nullptr) {
    HOSTPORT_TRY(header.pod, podIdentityAt(*pod, memberPath(path, "pod")));
  }
  HOSTPORT_TRY(header.netns, stringField(value, path, "netns", false, netnsPathProblem));
  HOSTPORT_TRY(header.pool, stringField(value, path, "pool", false, dnsLabelProblem));
  return header;
}

void putHeader(json& body, const AttachmentKey& key, const PodIdentity& pod,
               const std::string& netns, const std::string& pool) {
  body["containerId"] = key.containerId;
  body["ifname"] = key.ifname;
  body["pod"] = toJson(pod);
  body["netns"] = netns;
  body["pool"] = pool;
}

Result<StaticPortClaim> staticClaimAt(const json& value, std::string_view path) {
  HOSTPORT_TRY_VOID(requireObject(value, path));
  StaticPortClaim claim;
  HOSTPORT_TRY(claim.hostPort, portField(value, path, "hostPort"));
  HOSTPORT_TRY(claim.containerPort, portField(value, path, "containerPort"));
  HOSTPORT_TRY(claim.protocol, protocolField(value, path));
  HOSTPORT_TRY(claim.hostIp, hostIpField(value, path));
  return claim;
}

Result<DynamicPortRequest> dynamicRequestAt(const json& value, std::string_view path) {
  HOSTPORT_TRY_VOID(requireObject(value, path));
  DynamicPortRequest request;
  HOSTPORT_TRY(request.name, stringField(value, path, "name", true, dnsLabelProblem));
  HOSTPORT_TRY(request.containerPort, portField(value, path, "containerPort"));
  HOSTPORT_TRY(request.count, countField(value, path));
  HOSTPORT_TRY(request.protocol, protocolField(value, path));
  HOSTPORT_TRY_VOID(checkRangeEnd(path, "containerPort", request.containerPort, request.count));
  return request;
}

Result<std::optional<IpPrefix>*> podAddressSlot(Forwarding& forwarding, const JsonField& field,
                                                const IpPrefix& prefix) {
  auto& slot = prefix.address.family() == Family::kIPv4 ? forwarding.podV4 : forwarding.podV6;
  if (slot) return invalidValue(field, "is a second address of its family");
  return &slot;
}

/// How far a forwarding's pod addresses are checked: a request's against podAddressProblem (the
/// agent trusts no plugin with its DNAT targets); a lease's are read as recorded, so whatever a
/// journal holds can still be listed and released (the reconciler never lays a refused one out).
enum class PodAddresses { kChecked, kAsRecorded };

Result<Forwarding> forwardingAt(const json& value, std::string_view path, PodAddresses policy) {
  HOSTPORT_TRY_VOID(requireObject(value, path));
  Forwarding forwarding;
  HOSTPORT_TRY(forwarding.network, stringField(value, path, "network", false, networkNameProblem));
  HOSTPORT_TRY(const json* addresses, arrayField(value, path, "podIPs", false, 2));
  for (std::size_t i = 0; i < addresses->size(); ++i) {
    const JsonField entry{&(*addresses)[i], elementPath(memberPath(path, "podIPs"), i)};
    HOSTPORT_TRY(const std::string text, readString(entry));
    auto prefix = IpPrefix::parse(text);
    if (!prefix)
      return invalidValue(entry, "must be an address with its prefix, like 10.88.0.5/16");
    if (policy == PodAddresses::kChecked) {
      if (const Problem problem = podAddressProblem(*prefix)) return invalidValue(entry, *problem);
    }
    HOSTPORT_TRY(auto* slot, podAddressSlot(forwarding, entry, *prefix));
    *slot = *prefix;
  }
  HOSTPORT_TRY(forwarding.snat, readBool(jsonField(value, path, "snat"), true));
  HOSTPORT_TRY(forwarding.masqAll, boolField(value, path, "masqAll"));
  // The text is nft match syntax; the agent checks it with nft's grammar before it installs.
  HOSTPORT_TRY(forwarding.conditionsV4, readString(jsonField(value, path, "conditionsV4"), ""));
  HOSTPORT_TRY(forwarding.conditionsV6, readString(jsonField(value, path, "conditionsV6"), ""));
  return forwarding;
}

json toJson(const Forwarding& forwarding) {
  json addresses = json::array();
  for (const auto& pod : {forwarding.podV4, forwarding.podV6}) {
    if (pod) addresses.push_back(pod->str());
  }
  json body = {{"network", forwarding.network},
               {"podIPs", std::move(addresses)},
               {"snat", forwarding.snat},
               {"masqAll", forwarding.masqAll}};
  if (!forwarding.conditionsV4.empty()) body["conditionsV4"] = forwarding.conditionsV4;
  if (!forwarding.conditionsV6.empty()) body["conditionsV6"] = forwarding.conditionsV6;
  return body;
}

Result<std::optional<Forwarding>> optionalForwardingAt(const json& value, std::string_view path,
                                                       PodAddresses policy) {
  const json* member = jsonMember(value, "forwarding");
  if (member == nullptr) return std::nullopt;
  return forwardingAt(*member, memberPath(path, "forwarding"), policy);
}

/// A request whose forwarding names no address but asks for ports would hold them for nothing.
Result<void> requireForwardingAddress(const AllocationRequest& request) {
  const auto& forwarding = request.forwarding;
  const std::size_t rows = request.statics.size() + request.dynamics.size();
  if (!forwarding || forwarding->podV4 || forwarding->podV6 || rows == 0) return {};
  return fail(ErrorCode::kInvalidArgument,
              "forwarding.podIPs: names no pod address, but the request asks for " +
                  std::to_string(rows) + " port row(s): they would be forwarded nowhere");
}

Result<PortGrant> portGrantAt(const json& value, std::string_view path) {
  HOSTPORT_TRY_VOID(requireObject(value, path));
  PortGrant grant;
  HOSTPORT_TRY(grant.name, stringField(value, path, "name", false, dnsLabelProblem));
  HOSTPORT_TRY(grant.protocol, protocolField(value, path));
  HOSTPORT_TRY(grant.hostPort, portField(value, path, "hostPort"));
  // Absent for a hostNetwork pod's port (toJson(PortGrant)).
  HOSTPORT_TRY(const uint64_t containerPort,
               readInteger(jsonField(value, path, "containerPort"), 1, 65535, 0));
  grant.containerPort = static_cast<uint16_t>(containerPort);
  HOSTPORT_TRY(grant.count, countField(value, path));
  HOSTPORT_TRY(grant.hostIp, hostIpField(value, path));
  HOSTPORT_TRY(grant.isStatic, boolField(value, path, "static"));
  HOSTPORT_TRY_VOID(checkRangeEnd(path, "hostPort", grant.hostPort, grant.count));
  HOSTPORT_TRY_VOID(checkRangeEnd(path, "containerPort", grant.containerPort, grant.count));
  return grant;
}

Result<Lease> leaseAt(const json& value, std::string_view path) {
  HOSTPORT_TRY_VOID(requireObject(value, path));
  HOSTPORT_TRY(Header header, headerAt(value, path));
  Lease lease;
  lease.key = std::move(header.key);
  lease.pod = std::move(header.pod);
  lease.netns = std::move(header.netns);
  lease.pool = std::move(header.pool);
  HOSTPORT_TRY(const json* ports, arrayField(value, path, "ports", false, kMaxPortsPerRequest));
  for (std::size_t i = 0; i < ports->size(); ++i) {
    HOSTPORT_TRY(PortGrant grant,
                 portGrantAt((*ports)[i], elementPath(memberPath(path, "ports"), i)));
    lease.ports.push_back(std::move(grant));
  }
  HOSTPORT_TRY(lease.forwarding, optionalForwardingAt(value, path, PodAddresses::kAsRecorded));
  // Only a lease that forwards nowhere (a hostNetwork pod's) may leave a container port out.
  for (std::size_t i = 0; lease.forwarding && i < lease.ports.size(); ++i) {
    if (lease.ports[i].containerPort == 0) {
      return missingValue(memberPath(elementPath(memberPath(path, "ports"), i), "containerPort"));
    }
  }
  HOSTPORT_TRY(lease.sticky, readBool(jsonField(value, path, "sticky"), true));
  return lease;
}

/// A namespace in a pool's usage: a name, or "" for the leases of pods without one.
Problem usageNamespaceProblem(std::string_view text) {
  return text.empty() ? std::nullopt : dnsLabelProblem(text);
}

/// A pool's "rules" (absent when it has none) and "namespaceUsage".
Result<void> poolRulesAt(const json& value, std::string_view path, PoolUsageRow& row) {
  constexpr uint32_t kMaxCount = std::numeric_limits<uint32_t>::max();
  constexpr std::size_t kMaxEntries = 4096;
  if (const json* rules = jsonMember(value, "rules")) {
    const std::string at = memberPath(path, "rules");
    HOSTPORT_TRY_VOID(requireObject(*rules, at));
    HOSTPORT_TRY(const json* patterns, arrayField(*rules, at, "namespaces", false, kMaxEntries));
    for (std::size_t i = 0; i < patterns->size(); ++i) {
      const JsonField entry{&(*patterns)[i], elementPath(memberPath(at, "namespaces"), i)};
      HOSTPORT_TRY(std::string pattern, readString(entry));
      row.namespaces.push_back(std::move(pattern));
    }
    for (const auto& [key, target] : {std::pair{"maxPortsPerNamespace", &row.maxPortsPerNamespace},
                                      {"maxPortsPerPod", &row.maxPortsPerPod}}) {
      if (jsonMember(*rules, key) == nullptr) continue;
      HOSTPORT_TRY(*target, integerField(*rules, at, key, 1, kMaxCount));
    }
  }
  HOSTPORT_TRY(const json* usage, arrayField(value, path, "namespaceUsage", true, kMaxEntries));
  for (std::size_t i = 0; i < usage->size(); ++i) {
    const std::string at = elementPath(memberPath(path, "namespaceUsage"), i);
    HOSTPORT_TRY_VOID(requireObject((*usage)[i], at));
    NamespaceUsageRow entry;
    HOSTPORT_TRY(entry.name,
                 stringField((*usage)[i], at, "namespace", false, usageNamespaceProblem));
    HOSTPORT_TRY(entry.used, integerField((*usage)[i], at, "used", 0, kMaxCount));
    row.namespaceUsage.push_back(std::move(entry));
  }
  return {};
}

Result<PoolUsageRow> poolUsageRowAt(const json& value, std::string_view path) {
  HOSTPORT_TRY_VOID(requireObject(value, path));
  constexpr uint32_t kMaxCount = std::numeric_limits<uint32_t>::max();
  PoolUsageRow row;
  HOSTPORT_TRY(row.name, stringField(value, path, "name", true, dnsLabelProblem));
  HOSTPORT_TRY(row.size, integerField(value, path, "size", 0, kMaxCount));
  HOSTPORT_TRY(row.used, integerField(value, path, "used", 0, kMaxCount));
  HOSTPORT_TRY(row.free, integerField(value, path, "free", 0, kMaxCount));
  HOSTPORT_TRY(row.strategy, stringField(value, path, "strategy", false, dnsLabelProblem));
  HOSTPORT_TRY(const json* ranges, arrayField(value, path, "ranges", false, kMaxPoolRanges));
  for (std::size_t i = 0; i < ranges->size(); ++i) {
    const JsonField entry{&(*ranges)[i], elementPath(memberPath(path, "ranges"), i)};
    HOSTPORT_TRY(const std::string text, readString(entry));
    auto range = PortRange::parse(text);
    if (!range) return invalidValue(entry, "must be a port range like 30000-32767");
    row.ranges.push_back(*range);
  }
  HOSTPORT_TRY_VOID(poolRulesAt(value, path, row));
  return row;
}

Result<std::vector<Lease>> leaseArray(const json& body, std::string_view member) {
  HOSTPORT_TRY_VOID(requireObject(body, ""));
  // Leases are bounded by the body size limit, not by a count.
  HOSTPORT_TRY(const json* items, arrayField(body, "", member, true, SIZE_MAX));
  std::vector<Lease> leases;
  leases.reserve(items->size());
  for (std::size_t i = 0; i < items->size(); ++i) {
    HOSTPORT_TRY(Lease lease, leaseAt((*items)[i], elementPath(member, i)));
    leases.push_back(std::move(lease));
  }
  return leases;
}

}  // namespace

Result<json> parseBody(std::string_view body, std::size_t maxBytes) {
  return parseBoundedJson(body, "body", maxBytes, kMaxNestingDepth);
}

std::string dumpBody(const json& body) {
  return body.dump(-1, ' ', /*ensure_ascii=*/false, json::error_handler_t::replace);
}

json toJson(const AttachmentKey& key) {
  return {{"containerId", key.containerId}, {"ifname", key.ifname}};
}

Result<AttachmentKey> attachmentKeyFromJson(const json& value) {
  return attachmentKeyAt(value, "");
}

json toJson(const PodIdentity& pod) {
  return {{"namespace", pod.namespaceName}, {"name", pod.name}, {"uid", pod.uid}};
}

Result<PodIdentity> podIdentityFromJson(const json& value) { return podIdentityAt(value, ""); }

json toJson(const AllocationRequest& request) {
  json body = json::object();
  putHeader(body, request.key, request.pod, request.netns, request.pool);
  json statics = json::array();
  for (const StaticPortClaim& claim : request.statics) {
    json row = {{"hostPort", claim.hostPort},
                {"containerPort", claim.containerPort},
                {"protocol", protocolName(claim.protocol)}};
    if (claim.hostIp) row["hostIP"] = claim.hostIp->str();
    statics.push_back(std::move(row));
  }
  json dynamics = json::array();
  for (const DynamicPortRequest& dynamic : request.dynamics) {
    dynamics.push_back({{"name", dynamic.name},
                        {"containerPort", dynamic.containerPort},
                        {"count", dynamic.count},
                        {"protocol", protocolName(dynamic.protocol)}});
  }
  body["static"] = std::move(statics);
  body["dynamic"] = std::move(dynamics);
  if (request.forwarding) body["forwarding"] = toJson(*request.forwarding);
  if (!request.sticky) body["sticky"] = false;  // absent: sticky, the default
  return body;
}

Result<AllocationRequest> allocationRequestFromJson(const json& value) {
  HOSTPORT_TRY_VOID(requireObject(value, ""));
  HOSTPORT_TRY(Header header, headerAt(value, ""));
  AllocationRequest request;
  request.key = std::move(header.key);
  request.pod = std::move(header.pod);
  request.netns = std::move(header.netns);
  request.pool = std::move(header.pool);
  HOSTPORT_TRY(const json* statics, arrayField(value, "", "static", false, kMaxPortsPerRequest));
  HOSTPORT_TRY(const json* dynamics, arrayField(value, "", "dynamic", false, kMaxPortsPerRequest));
  if (statics->size() + dynamics->size() > kMaxPortsPerRequest) {
    return fail(ErrorCode::kInvalidArgument,
                "static and dynamic: " + std::to_string(statics->size() + dynamics->size()) +
                    " rows exceed the limit of " + std::to_string(kMaxPortsPerRequest));
  }
  for (std::size_t i = 0; i < statics->size(); ++i) {
    HOSTPORT_TRY(StaticPortClaim claim, staticClaimAt((*statics)[i], elementPath("static", i)));
    request.statics.push_back(std::move(claim));
  }
  std::set<std::string, std::less<>> names;
  for (std::size_t i = 0; i < dynamics->size(); ++i) {
    const std::string path = elementPath("dynamic", i);
    HOSTPORT_TRY(DynamicPortRequest dynamic, dynamicRequestAt((*dynamics)[i], path));
    // Names identify ports to the pod (the self query), so two rows may not share one.
    if (!names.insert(dynamic.name).second) {
      return fail(ErrorCode::kInvalidArgument,
                  path + ".name: " + quoteText(dynamic.name) + " is used twice");
    }
    request.dynamics.push_back(std::move(dynamic));
  }
  HOSTPORT_TRY(request.forwarding, optionalForwardingAt(value, "", PodAddresses::kChecked));
  HOSTPORT_TRY_VOID(requireForwardingAddress(request));
  HOSTPORT_TRY(request.sticky, readBool(jsonField(value, "", "sticky"), true));
  return request;
}

json toJson(const PortGrant& grant) {
  json row = {{"name", grant.name},
              {"protocol", protocolName(grant.protocol)},
              {"hostPort", grant.hostPort},
              {"count", grant.count},
              {"static", grant.isStatic}};
  // None for a hostNetwork pod's port: nothing is forwarded, its process binds the host port.
  if (grant.containerPort != 0) row["containerPort"] = grant.containerPort;
  if (grant.hostIp) row["hostIP"] = grant.hostIp->str();
  return row;
}

json toJson(const Lease& lease) {
  json body = json::object();
  putHeader(body, lease.key, lease.pod, lease.netns, lease.pool);
  json ports = json::array();
  for (const PortGrant& grant : lease.ports) ports.push_back(toJson(grant));
  body["ports"] = std::move(ports);
  if (lease.forwarding) body["forwarding"] = toJson(*lease.forwarding);
  if (!lease.sticky) body["sticky"] = false;
  return body;
}

Result<Lease> leaseFromJson(const json& value) { return leaseAt(value, ""); }

json toJson(const PoolUsageRow& row) {
  json ranges = json::array();
  for (const PortRange& range : row.ranges) ranges.push_back(range.str());
  json body = {{"name", row.name}, {"size", row.size},         {"used", row.used},
               {"free", row.free}, {"strategy", row.strategy}, {"ranges", std::move(ranges)}};
  json rules = json::object();
  if (!row.namespaces.empty()) rules["namespaces"] = row.namespaces;
  if (row.maxPortsPerNamespace) rules["maxPortsPerNamespace"] = *row.maxPortsPerNamespace;
  if (row.maxPortsPerPod) rules["maxPortsPerPod"] = *row.maxPortsPerPod;
  if (!rules.empty()) body["rules"] = std::move(rules);
  json usage = json::array();
  for (const auto& entry : row.namespaceUsage) {
    usage.push_back({{"namespace", entry.name}, {"used", entry.used}});
  }
  body["namespaceUsage"] = std::move(usage);
  return body;
}

Result<PoolUsageRow> poolUsageRowFromJson(const json& value) { return poolUsageRowAt(value, ""); }

json gcRequestBody(const GcRequest& request) {
  json keys = json::array();
  for (const AttachmentKey& key : request.valid) keys.push_back(toJson(key));
  return {{"network", request.network}, {"valid", std::move(keys)}};
}

Result<GcRequest> gcRequestFromJson(const json& body) {
  HOSTPORT_TRY_VOID(requireObject(body, ""));
  GcRequest request;
  // Required: a GC without its list would read as "nothing is valid" and release everything.
  HOSTPORT_TRY(const json* items, arrayField(body, "", "valid", true, kMaxGcKeys));
  request.valid.reserve(items->size());
  for (std::size_t i = 0; i < items->size(); ++i) {
    HOSTPORT_TRY(AttachmentKey key, attachmentKeyAt((*items)[i], elementPath("valid", i)));
    request.valid.push_back(std::move(key));
  }
  // Required too: a GC is scoped to one network's leases, never all of them.
  HOSTPORT_TRY(request.network, stringField(body, "", "network", true, networkNameProblem));
  return request;
}

json leaseListBody(std::string_view member, const std::vector<Lease>& leases) {
  json items = json::array();
  for (const Lease& lease : leases) items.push_back(toJson(lease));
  json body = json::object();
  body[std::string(member)] = std::move(items);
  return body;
}

Result<std::vector<Lease>> leaseListFromJson(const json& body, std::string_view member) {
  return leaseArray(body, member);
}

json releasedBody(const std::optional<Lease>& lease) {
  return {{"released", lease ? toJson(*lease) : json(nullptr)}};
}

Result<std::optional<Lease>> releasedFromJson(const json& body) {
  HOSTPORT_TRY_VOID(requireObject(body, ""));
  const auto it = body.find("released");
  if (it == body.end()) return missingValue("released");
  if (it->is_null()) return std::optional<Lease>();
  HOSTPORT_TRY(Lease lease, leaseAt(*it, "released"));
  return std::optional<Lease>(std::move(lease));
}

json poolsBody(const std::vector<PoolUsageRow>& rows) {
  json items = json::array();
  for (const PoolUsageRow& row : rows) items.push_back(toJson(row));
  return {{"pools", std::move(items)}};
}

Result<std::vector<PoolUsageRow>> poolsFromJson(const json& body) {
  HOSTPORT_TRY_VOID(requireObject(body, ""));
  HOSTPORT_TRY(const json* items, arrayField(body, "", "pools", true, SIZE_MAX));
  std::vector<PoolUsageRow> rows;
  for (std::size_t i = 0; i < items->size(); ++i) {
    HOSTPORT_TRY(PoolUsageRow row, poolUsageRowAt((*items)[i], elementPath("pools", i)));
    rows.push_back(std::move(row));
  }
  return rows;
}

}  // namespace hostport::agent::api
