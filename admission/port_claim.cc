#include "admission/port_claim.h"

#include <algorithm>
#include <charconv>

#include "kube/api_time.h"
#include "kube/paged_list.h"

namespace hostport::admission {
namespace {

using nlohmann::json;

std::optional<uint32_t> number(const json& object, std::string_view key) {
  const auto found = object.find(key);
  if (found == object.end() || !found->is_string()) return std::nullopt;
  const auto& text = found->get_ref<const std::string&>();
  uint32_t value = 0;
  const auto [end, error] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (error != std::errc() || end != text.data() + text.size() || text.empty()) return std::nullopt;
  return value;
}

std::string text(const json& object, std::string_view key) {
  const auto found = object.find(key);
  return found != object.end() && found->is_string() ? found->get<std::string>() : "";
}

}  // namespace

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
  if (!lease.is_object()) return std::nullopt;
  const json metadata = lease.value("metadata", json::object());
  const json spec = lease.value("spec", json::object());
  if (!metadata.is_object() || !spec.is_object()) return std::nullopt;
  const json labels = metadata.value("labels", json::object());
  const json notes = metadata.value("annotations", json::object());
  if (!labels.is_object() || !notes.is_object()) return std::nullopt;
  PortClaim claim;
  claim.pool = text(labels, kClaimPoolLabel);
  const auto port = number(labels, kClaimPortLabel);
  const auto first = number(notes, kClaimFirstAnnotation);
  const auto count = number(notes, kClaimCountAnnotation);
  if (claim.pool.empty() || !port || !first || !count || *port == 0 || *port > 65535 ||
      *count == 0 || *first > *port || *first + *count - 1 < *port) {
    return std::nullopt;
  }
  claim.port = static_cast<uint16_t>(*port);
  claim.first = static_cast<uint16_t>(*first);
  claim.count = static_cast<uint16_t>(*count);
  claim.entry = text(notes, kClaimEntryAnnotation);
  claim.holder = text(spec, "holderIdentity");
  claim.resourceVersion = text(metadata, "resourceVersion");
  if (claim.holder.empty() || text(metadata, "name") != claim.leaseName()) return std::nullopt;
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
    const auto claimed = static_cast<uint32_t>(pool.claims.size());
    out.push_back({{"pool", pool.pool},
                   {"size", pool.size},
                   {"claimed", claimed},
                   {"free", pool.size - std::min(pool.size, claimed)},
                   {"claims", std::move(claims)}});
  }
  return out;
}

}  // namespace hostport::admission
