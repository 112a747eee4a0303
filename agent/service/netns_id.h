#pragma once
// Is a sandbox still there? Its netns path (CNI_NETNS) and the namespace's identity (device and
// inode of the nsfs file) are recorded at ADD. The path gone, or naming another namespace (paths
// like /var/run/netns/cni-<uuid> are unique, but /proc/<pid>/ns/net is reused with the pid),
// means the sandbox is gone. The agent must see the path (the DaemonSet mounts /var/run/netns);
// where it cannot, the identity stays unknown and liveness is not judged.

#include <string>
#include <string_view>

#include "agent/lease.h"

namespace hostport::agent::service {

/// The identity of the namespace at `path`; unknown when it cannot be read.
NetnsId netnsIdOf(std::string_view path);

enum class NetnsLiveness {
  kAlive,    // the path names the recorded namespace
  kGone,     // the path is missing, or names another namespace
  kUnknown,  // no identity was recorded, or the path cannot be read for another reason
};

/// What judging a lease's sandbox needs of it: a few dozen bytes where a whole Lease is several
/// hundred, since the reconciler looks at every lease every couple of seconds.
struct SandboxRef {
  AttachmentKey key;
  std::string netns;
  NetnsId netnsId;
};
SandboxRef sandboxOf(const Lease& lease);

/// Judges a sandbox by its recorded netns path and identity.
NetnsLiveness netnsLiveness(const SandboxRef& sandbox);

}  // namespace hostport::agent::service
