#pragma once
// A Linux namespace's identity: the device and inode of its nsfs file, as stat(2) reports them
// (two namespaces are the same when both match, ioctl_ns(2)). The lease records its sandbox's
// network namespace by it (NetnsId), the pod socket compares its callers' namespaces by it, and
// the check of CNI_NETNS returns it.

#include <sys/stat.h>

#include <cstdint>

#include "common/error.h"

namespace hostport {

struct NamespaceId {
  uint64_t device = 0;
  uint64_t inode = 0;
  /// Zero: not known (a path the agent could not see, or a lease from before it was recorded).
  bool known() const { return inode != 0; }
  friend auto operator<=>(const NamespaceId&, const NamespaceId&) = default;
};

/// The identity of the namespace behind `fd`, an open nsfs file.
Result<NamespaceId> namespaceIdOf(int fd);
/// The identity stat(2) of an nsfs file reported.
NamespaceId namespaceIdOf(const struct stat& info);

}  // namespace hostport
