#pragma once
// The pod socket's two rules about a caller beyond its network namespace (docs/design.md, "The pod
// socket"), pure, from the facts namespace_origin.h reads:
//
// May a request wait for a lease of this netns? Only when a pod sandbox could ever have it. A
// sandbox's netns is made by the container runtime, root in the agent's user namespace, so it is
//  - owned by the agent's user namespace: every pod without a user namespace of its own;
//  - or owned by a user namespace directly below the agent's that uid 0 created: a pod with
//    `hostUsers: false` (KEP-127), whose netns containerd (1.7 and later, through the OCI runtime)
//    and CRI-O (pinns) make inside the pod's user namespace.
// Anything else was made by someone else: `unshare -Urn` as uid 65534 makes a netns owned by a
// user namespace that uid 65534 created, and no ADD will ever name it. A wait for it is refused at
// once instead of holding a connection for a minute. (Root in a container without a user namespace
// can still make a netns of the second kind and wait: within its cap, below.)
//
// What does the per-caller connection cap count? An identity the caller cannot multiply by making
// namespaces, which any process may do when unprivileged user namespaces are allowed:
//  - the netns, when the agent's user namespace owns it: only a process privileged over the node
//    makes one (a pod's sandbox: 16 connections per pod);
//  - else the outermost pid namespace below the agent's that the caller is in: a container's (or a
//    pod's, when its containers share one), which no process inside can leave or add a sibling
//    to, however many user, network or pid namespaces it nests below it;
//  - else, for a process in the agent's own pid namespace (on the node, or in a hostPID pod), its
//    uid as the kernel translates it (SO_PEERCRED), which only CAP_SETUID can change.
// Not the uid everywhere: every pod that runs as uid 0 would share one count, and a container's
// root keeps CAP_SETUID by default, so it can make user namespaces under any uid it likes.
// Callers that could not be identified share one count.

#include <sys/types.h>

#include <compare>
#include <cstdint>
#include <optional>
#include <string>

#include "agent/server/namespace_origin.h"
#include "lease/lease.h"

namespace hostport::agent::server {

/// Who made a caller's namespaces, as the kernel says.
struct CallerNamespaces {
  NetnsOwner netnsOwner;
  std::optional<NamespaceId> outermostPidns;  // none: the caller is in the agent's pid namespace
  uid_t uid = 0;                              // SO_PEERCRED, in the agent's user namespace
};

/// What the per-caller connection cap counts.
struct CallerKey {
  enum class Kind { kUnidentified, kNetns, kPidns, kUid };
  Kind kind = Kind::kUnidentified;
  uint64_t first = 0;   // device, or the uid
  uint64_t second = 0;  // inode
  friend auto operator<=>(const CallerKey&, const CallerKey&) = default;
  /// "netns net:[4026532001]", "pid namespace pid:[4026532002]", "uid 65534", "unidentified".
  std::string str() const;
};

CallerKey callerKey(const NetnsId& netns, const CallerNamespaces& caller);

/// Why no pod sandbox will ever have a netns of this owner, to end a refusal ("it belongs to a user
/// namespace that uid 65534 made"); nullopt when one could.
std::optional<std::string> whyNeverASandbox(const NetnsOwner& owner);

}  // namespace hostport::agent::server
