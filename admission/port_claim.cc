#include "admission/port_claim.h"

#include <algorithm>
#include <charconv>

#include "common/bounded_json.h"
#include "common/json_fields.h"
#include "kube/api_time.h"
#include "kube/paged_list.h"

namespace hostport::admission {
namespace {

using nlohmann::json;

std::optional<uint32_t> number(const json& object, std::string_view key) {
  const std::string text = jsonText(object, key);
  uint32_t value = 0;
  const auto [end, error] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (error != std::errc() || end != text.data() + text.size() || text.empty()) return std::nullopt;
  return value;
}

}  // namespace

std::string leasesPath(std::string_view namespaceName) {
  return "/apis/coordination.k8s.io/v1/namespaces/" + std::string(namespaceName) + "/leases";
}

Result<json> parseLease(std::string_view body, std::string_view what) {
  constexpr std::size_t kMaxLeaseBytes = 64 << 10;
  constexpr int kMaxLeaseDepth = 16;
  return parseBoundedJson(body, what, kMaxLeaseBytes, kMaxLeaseDepth);
}

std::string PortClaim::leaseName() const { return pool + "." + std::to_string(port); }

json claimLease(const PortClaim& claim, std::string_view namespaceName,
                std::chrono::system_clock::time_point now) {
  return {
      {"apiVersion", "coordination.k8s.io/v1"},
      {"kind", "Lease"},
      {"metadata",
       {{"name", claim.leaseName()},
        {"namespace", namespaceName},
        {"labels", {{kClaimPoolLabel, claim.pool}, {kClaimPortLabel, std::to_string(claim.port)}}},
        {"annotations",
         {{kClaimEntryAnnotation, claim.entry},
          {kClaimFirstAnnotation, std::to_string(claim.first)},
          {kClaimCountAnnotation, std::to_string(claim.count)}}}}},
      {"spec", {{"holderIdentity", claim.holder}, {"acquireTime", kube::apiMicroTime(now)}}}};
}

std::optional<PortClaim> readClaimLease(const json& lease) {
  const json* metadata = jsonMember(lease, "metadata");
  const json* spec = jsonMember(lease, "spec");
  const json* labels = metadata != nullptr ? jsonMember(*metadata, "labels") : nullptr;
  const json* notes = metadata != nullptr ? jsonMember(*metadata, "annotations") : nullptr;
  if (spec == nullptr || labels == nullptr || notes == nullptr) return std::nullopt;
  PortClaim claim;
  claim.pool = jsonText(*labels, kClaimPoolLabel);
  const auto port = number(*labels, kClaimPortLabel);
  const auto first = number(*notes, kClaimFirstAnnotation);
  const auto count = number(*notes, kClaimCountAnnotation);
  if (claim.pool.empty() || !port || !first || !count || *port == 0 || *port > 65535 ||
      *count == 0 || *first > *port || *first + *count - 1 < *port) {
    return std::nullopt;
  }
  claim.port = static_cast<uint16_t>(*port);
  claim.first = static_cast<uint16_t>(*first);
  claim.count = static_cast<uint16_t>(*count);
  claim.entry = jsonText(*notes, kClaimEntryAnnotation);
  claim.holder = jsonText(*spec, "holderIdentity");
  claim.resourceVersion = jsonText(*metadata, "resourceVersion");
  if (claim.holder.empty() || jsonText(*metadata, "name") != claim.leaseName()) return std::nullopt;
  return claim;
}

Result<std::vector<PortClaim>> listClaims(kube::KubeClient& client,
                                          std::string_view namespaceName) {
  kube::ListQuery query;
  query.labelSelector = kClaimPoolLabel;
  HOSTPORT_TRY(const auto listed, kube::listCollection(client,
                                                       "/apis/coordination.k8s.io/v1/namespaces/" +
                                                           std::string(namespaceName) + "/leases",
                                                       query));
  std::vector<PortClaim> claims;
  for (const json& lease : listed.items) {
    if (auto claim = readClaimLease(lease)) claims.push_back(std::move(*claim));
  }
  return claims;
}

std::vector<ClusterPoolClaims> clusterPoolClaims(const std::vector<agent::core::PoolSpec>& pools,
                                                 std::vector<PortClaim> claims) {
  std::ranges::sort(claims, {}, &PortClaim::port);
  std::vector<ClusterPoolClaims> out;
  for (const auto& spec : pools) {
    if (spec.scope != agent::core::PoolScope::kCluster) continue;
    ClusterPoolClaims pool{spec.name, 0, {}};
    for (const auto& range : spec.ranges) pool.size += range.size();
    for (const auto& claim : claims) {
      if (claim.pool == spec.name) pool.claims.push_back(claim);
    }
    out.push_back(std::move(pool));
  }
  return out;
}

json clusterPoolClaimsJson(const std::vector<ClusterPoolClaims>& pools) {
  json out = json::array();
  for (const auto& pool : pools) {
    json claims = json::array();
    for (const auto& claim : pool.claims) {
      claims.push_back({{"port", claim.port},
                        {"holder", claim.holder},
                        {"entry", claim.entry},
                        {"first", claim.first},
                        {"count", claim.count}});
    }
    out.push_back({{"pool", pool.pool},
                   {"size", pool.size},
                   {"claimed", pool.claimed()},
                   {"free", pool.free()},
                   {"claims", std::move(claims)}});
  }
  return out;
}

}  // namespace hostport::admission
