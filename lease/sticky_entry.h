#pragma once
// What the sticky memory (agent/core/sticky_memory.h) keeps of one pod, as a plain value: the
// form in which the memory is journaled with the leases (agent/store) and read back at start, so
// a pod that comes back after an agent restart is still offered its previous ports.

#include <string>
#include <vector>

#include "lease/lease.h"

namespace hostport {

struct StickyEntry {
  std::string namespaceName;
  std::string name;
  std::string pool;
  /// The pod's dynamic rows: name, protocol, hostPort and count (containerPort is not kept).
  std::vector<PortGrant> ports;
  /// Set only for a replayed grant of a pod that opted out: what was remembered of it goes.
  bool forget = false;
  friend bool operator==(const StickyEntry&, const StickyEntry&) = default;
};

/// What a journaled grant of `lease` did to the sticky memory: remember its dynamic rows, or
/// forget the pod when it opted out.
inline StickyEntry stickyEntryOf(const Lease& lease) {
  StickyEntry entry{lease.pod.namespaceName, lease.pod.name, lease.pool, {}, !lease.sticky};
  for (const auto& grant : lease.ports) {
    if (!grant.isStatic) entry.ports.push_back(grant);
  }
  return entry;
}

}  // namespace hostport
