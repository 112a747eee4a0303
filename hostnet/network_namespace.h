#pragma once
// Does a path name a network namespace? CNI_NETNS is the runtime's, and the plugin passes it on to
// the agent, which records the namespace's identity and later judges the sandbox by it
// (agent/service/netns_id.h). Anything else there (a regular file, a FIFO, a device, another kind
// of namespace, nothing at all) would get a lease and forwards for a sandbox that cannot exist,
// and one the reconciler never releases. Both the plugin and the agent ask this one function.
//
// Design note:
// - The path is opened with O_PATH first: that opens nothing (a FIFO does not block, a device's
//   open() does not run: opening /dev/watchdog arms it), yet fstatfs() and fstat() answer. Only
//   an nsfs inode (NSFS_MAGIC) is then opened for reading, which NS_GET_NSTYPE needs (an ioctl on
//   an O_PATH descriptor fails with EBADF), and that second open must reach the same inode.
// - Links are followed: /proc/<pid>/ns/net (what dockershim and cri-dockerd pass) is a magic link,
//   and what the link reaches is what is checked.

#include <cstdint>
#include <string>

#include "common/error.h"
#include "common/namespace_id.h"

namespace hostport::hostnet {

/// The network namespace `path` names. Errors say why not, worded to follow the path ("is a
/// regular file, not a network namespace"): kNotFound when nothing is there (ENOENT, ENOTDIR),
/// kInvalidArgument when something else is, kIo when it cannot be looked at (EACCES, ELOOP...).
/// The errno, where there is one, is the cause.
Result<NamespaceId> networkNamespaceAt(const std::string& path);

}  // namespace hostport::hostnet
