#pragma once
// A cluster pool's port claim as the API server keeps it: one coordination.k8s.io/v1 Lease per
// port, named `<pool>.<port>`, in the admission server's namespace. The name is the lock: the API
// server creates an object of a given name once, so of two replicas that claim one port, one
// gets 201 and the other 409. One namespace for every claim, not the pod's, because Lease names
// are unique only within a namespace and a port must be unique in the cluster.
//
// The Lease says who holds the port, so a pod re-created under its name (a StatefulSet ordinal)
// finds it again, and the repair loop can tell a claim whose pod is gone:
//   labels:       hostport.io/pool: games, hostport.io/port: "40001" (list and watch select them)
//   annotations:  hostport.io/entry: web (the hostport.io/ports entry), hostport.io/first: "40000"
//                 and hostport.io/count: "4" (the entry's whole block, for a range)
//   spec.holderIdentity: the holder (claim_holder.h's form: "ns/name", or "ns/prefix*token")

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "agent/core/pool_spec.h"
#include "common/error.h"
#include "kube/kube_client.h"

namespace hostport::admission {

inline constexpr std::string_view kClaimPoolLabel = "hostport.io/pool";
inline constexpr std::string_view kClaimPortLabel = "hostport.io/port";
inline constexpr std::string_view kClaimEntryAnnotation = "hostport.io/entry";
inline constexpr std::string_view kClaimFirstAnnotation = "hostport.io/first";
inline constexpr std::string_view kClaimCountAnnotation = "hostport.io/count";

/// One claimed port.
struct PortClaim {
  std::string pool;
  uint16_t port = 0;
  std::string holder;
  std::string entry;   // the hostport.io/ports entry's name
  uint16_t first = 0;  // the entry's block: first..first+count-1 holds port
  uint16_t count = 1;
  std::string resourceVersion;  // as read; "" for one not created yet

  /// `<pool>.<port>`: a DNS subdomain, since pool names are DNS labels.
  std::string leaseName() const;
  friend bool operator==(const PortClaim&, const PortClaim&) = default;
};

/// The Leases of `namespaceName`: "/apis/coordination.k8s.io/v1/namespaces/<ns>/leases".
std::string leasesPath(std::string_view namespaceName);

/// A Lease as the API server answered it (a claim, or the repair loop's leader Lease), bounded.
Result<nlohmann::json> parseLease(std::string_view body, std::string_view what);

/// The Lease object that creates `claim` in `namespaceName`, acquired at `now`.
nlohmann::json claimLease(const PortClaim& claim, std::string_view namespaceName,
                          std::chrono::system_clock::time_point now);

/// The claim a Lease records; nullopt for a Lease that is no claim (another's, a hand-made one
/// whose name, labels or annotations disagree), which the cache then ignores.
std::optional<PortClaim> readClaimLease(const nlohmann::json& lease);

/// Every claim in `namespaceName`, listed (paged) from the API server.
Result<std::vector<PortClaim>> listClaims(kube::KubeClient& client, std::string_view namespaceName);

/// One cluster pool as the claims make it: what `hostportctl pools --cluster` shows.
struct ClusterPoolClaims {
  std::string pool;
  uint32_t size = 0;
  std::vector<PortClaim> claims;  // by port

  uint32_t claimed() const { return static_cast<uint32_t>(claims.size()); }
  uint32_t free() const { return size - std::min(size, claimed()); }
};

/// The cluster pools of `pools` with their claims among `claims` (others' are left out).
std::vector<ClusterPoolClaims> clusterPoolClaims(const std::vector<agent::core::PoolSpec>& pools,
                                                 std::vector<PortClaim> claims);
nlohmann::json clusterPoolClaimsJson(const std::vector<ClusterPoolClaims>& pools);

}  // namespace hostport::admission
