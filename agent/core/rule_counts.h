#pragma once
// What a pool's rules (pool_rules.h) are judged on, counted as leases come and go rather than
// from the leases at each request: the ports of the pool held per namespace, for every pool (a
// handful of namespaces, and `hostportctl pools` shows them), and per pod only for a pool with
// maxPortsPerPod (one entry per pod would cost ~100 bytes a lease), rebuilt from the leases when
// a reload sets that quota.
//
// A lease counts in every pool that holds one of its ports: its own for its dynamic rows, and
// the pool whose range holds a static claim, whichever pool the lease names.

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <unordered_map>
#include <vector>

#include "agent/core/pool_rules.h"
#include "agent/core/pool_spec.h"
#include "lease/lease.h"

namespace hostport::agent::core {

/// The ports of `grants` (a lease's rows) that lie in pool `pool`: what its rules count.
uint32_t portsInPool(const std::vector<PortGrant>& grants, const PoolOfPort& poolOf,
                     std::size_t pool);

/// What `request`, made to pool `requestPool`, asks of pool `pool`: its dynamic rows when that is
/// the request's pool, and its static claims in that pool's ranges, whichever pool the request
/// names (a static hostPort takes the port from the pool whose range holds it). A claim repeated
/// is one, as the allocator grants it.
uint32_t askedOf(const AllocationRequest& request, const PoolOfPort& poolOf, std::size_t pool,
                 std::size_t requestPool);

/// One pool's counts.
class RuleCounts {
 public:
  using Counts = std::unordered_map<std::string, uint32_t>;

  /// `countPods`: the pool has maxPortsPerPod.
  explicit RuleCounts(bool countPods);

  /// Adds `ports` of the pool, held by a lease of `pod`, to its namespace's and pod's counts.
  /// Zero ports change nothing.
  void add(const PodIdentity& pod, uint32_t ports);
  /// Takes away what add() added.
  void remove(const PodIdentity& pod, uint32_t ports);
  /// What `pod` and its namespace hold in the pool, as checkRules() takes it.
  RuleUsage usageOf(const PodIdentity& pod) const;
  /// Ports held by namespace name; a lease without a namespace counts under "".
  const Counts& namespaces() const { return namespaceUse_; }

  bool countsPods() const { return podUse_.has_value(); }
  /// Starts counting per pod, from none (add each lease's ports with addPod()), or stops and
  /// forgets the pods' counts.
  void countPods(bool on);
  /// Adds `ports` to the count of `pod` alone: rebuilding the pods' counts after countPods(true).
  void addPod(const PodIdentity& pod, uint32_t ports);

 private:
  Counts namespaceUse_;
  std::optional<Counts> podUse_;  // by podQuotaKey(); kept only while the pool has maxPortsPerPod
};

}  // namespace hostport::agent::core
