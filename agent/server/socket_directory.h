#pragma once
// The directory a Unix socket of the agent is bound in. Whoever may write it may replace the
// socket with their own, and every client then talks to them (root's hostportctl and the CNI
// plugin included), so the agent trusts neither the umask to make it nor an existing one it has
// not checked:
// - missing, it is made with mkdir() and then set to the mode asked for with fchmod() (mkdir()'s
//   mode goes through the umask: under `umask 000` the agent made 0777 directories), and so is
//   each missing parent, 0755;
// - existing (or just made), the directory itself, symlinks followed and checked once opened
//   (fstat), must be owned by root or the agent's euid and writable by no one else: no group or
//   other write bit, sticky or not (in a sticky /tmp another user may still plant the lock file
//   or the socket's name before us).
// The parents are not checked: they are the operator's (/run), and a path under a directory
// others may write is refused at its last step anyway.

#include <sys/types.h>

#include <filesystem>

#include "common/error.h"
#include "common/unique_fd.h"

namespace hostport::agent::server {

/// Makes `dir` (mode `mode`, parents 0755) or checks it, as above, and returns it open
/// (O_DIRECTORY). kNotAllowed naming the path, the owner and the mode for a directory it refuses
/// ("/run/hostport is mode 0777 (owner uid 0): others may write it, and so replace the socket");
/// kIo for a failed call.
Result<UniqueFd> prepareSocketDirectory(const std::filesystem::path& dir, mode_t mode);

}  // namespace hostport::agent::server
