#pragma once
// Which process holds a socket, by inode: the same walk as `ss -p` or `fuser`, over
// /proc/<pid>/fd/* looking for the link "socket:[<inode>]".
//
// Design note:
// - Only used to name a conflict's holder in an error message, so it is best effort: processes
//   that exit mid-scan, and /proc entries we may not read, are skipped, never errors.
// - The walk is bounded (OwnerSearchOptions::maxDescriptors) because a node can hold millions of
//   descriptors and an allocation request must not stall behind a message nicety.
// - A socket shared by several processes (fork, SCM_RIGHTS) is reported once: the first holder
//   in /proc order, which is ascending pid, so usually the parent.

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>

#include "common/error.h"

namespace hostport::hostnet {

/// A process, as named in an error: "pid 1234 (nginx)".
struct ProcessRef {
  uint32_t pid = 0;
  std::string command;  // /proc/<pid>/comm, printable ASCII only; empty when it was unreadable

  friend bool operator==(const ProcessRef&, const ProcessRef&) = default;
};

struct OwnerSearchOptions {
  std::string procRoot = "/proc";          // injectable for tests
  std::size_t maxDescriptors = 1'000'000;  // readlink calls before giving up
};

/// The first process holding the socket with `inode`; nullopt when no process holds it (inode
/// 0, a kernel socket, or the holder is gone). Error{kIo} when procRoot cannot be listed,
/// Error{kUnavailable} when the bound on descriptors was reached first.
Result<std::optional<ProcessRef>> findSocketOwner(uint32_t inode,
                                                  const OwnerSearchOptions& options = {});

}  // namespace hostport::hostnet
