#pragma once
// Is a sandbox still there? Its netns path (CNI_NETNS) and the namespace's identity (device and
// inode of the nsfs file) are recorded at ADD. The path gone, or naming another namespace (paths
// like /var/run/netns/cni-<uuid> are unique, but /proc/<pid>/ns/net is reused with the pid),
// means the sandbox is gone. The agent must see the path (the DaemonSet mounts /var/run/netns);
// where it cannot, the identity stays unknown and liveness is not judged.
//
// The path comes from whoever asks for the lease (the plugin, from CNI_NETNS), and the agent does
// not take its word: a path that leads to anything but a network namespace is refused, as the
// plugin refuses it (hostnet/network_namespace.h, the one check both make). A path the agent
// cannot see or read is not: its mount namespace is not the plugin's.

#include <string>
#include <string_view>

#include "common/error.h"
#include "lease/lease.h"

namespace hostport::agent::service {

/// The identity of the network namespace at `path`; unknown for an empty path or one the agent
/// cannot see or read. kInvalidArgument naming `netns` when the path leads to something else (a
/// regular file, a FIFO, a device, another kind of namespace).
Result<NetnsId> netnsIdOf(std::string_view path);

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
