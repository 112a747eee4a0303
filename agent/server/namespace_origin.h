#pragma once
// Who made a caller's namespaces, as the kernel records it (ioctl_ns(2)), for the pod socket's
// rules on who may wait and what its per-caller cap counts (caller_identity.h):
// - NS_GET_USERNS: the user namespace that owns a network namespace (the one its creator was in);
// - NS_GET_PARENT: a user or pid namespace's parent;
// - NS_GET_OWNER_UID: the uid that created a user namespace, in the agent's user namespace's
//   terms (the kernel translates it).
// A process can set none of these for itself: an unprivileged one can make new namespaces, but
// they are owned by a user namespace it created, under its own uid, below the ones it is in. Each
// walk stops at the agent's own namespace, and at kMaxNamespaceDepth (the kernel's own limit on
// nesting, 32 for both kinds).

#include <sys/types.h>

#include <cstdint>
#include <optional>

#include "common/error.h"
#include "common/namespace_id.h"
#include "common/unique_fd.h"

namespace hostport::agent::server {

inline constexpr int kMaxNamespaceDepth = 32;

/// Where a network namespace's owning user namespace sits relative to the agent's.
struct NetnsOwner {
  enum class Place {
    kAgents,     // the agent's own user namespace: made by a process privileged over it (a runtime)
    kBelow,      // a user namespace below the agent's, at `depth` (1: a child of the agent's)
    kElsewhere,  // above or beside the agent's: nothing the agent's node made for a pod
  };
  Place place = Place::kElsewhere;
  int depth = 0;
  /// With kBelow: the user namespace below the agent's that holds the owner (the owner itself at
  /// depth 1), and the uid that created it, in the agent's terms.
  NamespaceId outermost;
  uid_t outermostCreator = 0;
};

/// Walks from the user namespace that owns `netnsFd` up to `agentUserns`.
Result<NetnsOwner> netnsOwner(int netnsFd, const NamespaceId& agentUserns);

/// The pid namespace directly below `agentPidns` on the way up from `pidnsFd` (a container's, for
/// a process in a container, however deep it has nested its own); nullopt when `pidnsFd` is
/// `agentPidns` itself (a process of the agent's own pid namespace: a node process). kUnavailable
/// when `pidnsFd` is not below `agentPidns`.
Result<std::optional<NamespaceId>> outermostPidnsBelow(int pidnsFd, const NamespaceId& agentPidns);

/// The agent's own user and pid namespaces, which the walks above stop at.
struct AgentNamespaces {
  NamespaceId user;
  NamespaceId pid;
  /// Reads /proc/self/ns/user and /proc/self/ns/pid.
  static Result<AgentNamespaces> ofThisProcess();
};

}  // namespace hostport::agent::server
