#pragma once
// The process at the other end of a Unix connection, as the kernel names it, held so that it
// cannot be confused with a later process that reuses its pid. The pod socket's identity, after
// SPIRE's workload API (docs/design.md, "The pod socket"):
// - SO_PEERCRED gives the pid of the process that called connect();
// - /proc/<pid> is opened at once and the directory fd held: it keeps naming that process (its
//   struct pid), so after it exits, reads through the fd fail even when the number is reused;
// - its start time (stat field 22) is recorded, and compared again before every answer;
// - SO_PEERPIDFD (Linux 6.5), when the kernel has it, closes the one window left: a caller that
//   exited between connect() and the open of /proc/<pid>, whose pid another process got in
//   between. The pidfd names the caller itself, so it must still be alive once /proc/<pid> is
//   open.
// The network namespace is read through the held fd (ns/net), as device and inode: the same
// NetnsId the agent records in a lease at ADD (agent/service/netns_id.h).

#include <sys/types.h>

#include <cstdint>

#include "agent/lease.h"
#include "agent/server/proc_stat.h"
#include "common/error.h"
#include "common/unique_fd.h"

namespace hostport::agent::server {

class PeerProcess {
 public:
  /// The process that connected `socketFd` (a connected AF_UNIX stream socket). kUnavailable when
  /// the kernel names no pid we can see (a peer in a pid namespace we do not see gets 0) or the
  /// process is already gone; kIo for other failures. Messages name the pid.
  static Result<PeerProcess> ofSocket(int socketFd);
  /// Holds /proc/<pid> of a pid known some other way: ofSocket()'s second half, and tests'.
  static Result<PeerProcess> open(pid_t pid);

  pid_t pid() const { return pid_; }
  uint64_t startTime() const { return startTime_; }

  /// The identity of the process's network namespace: fstatat(ns/net) through the held fd.
  Result<NetnsId> netns() const;
  /// Fails unless the held process is still running with the start time recorded at open:
  /// kUnavailable "process <pid> has exited" (or "... is not the process that connected").
  Result<void> checkUnchanged() const;

 private:
  PeerProcess(pid_t pid, UniqueFd dir, uint64_t startTime)
      : pid_(pid), dir_(std::move(dir)), startTime_(startTime) {}
  Result<ProcStat> readStat() const;

  pid_t pid_ = 0;
  UniqueFd dir_;  // /proc/<pid>, O_DIRECTORY
  uint64_t startTime_ = 0;
};

}  // namespace hostport::agent::server

namespace hostport::agent::server {

/// Who is at the other end of one connection, for a listener that identifies its callers (the
/// pod socket): decided once, at accept, and carried by each of the connection's requests.
struct ConnectionPeer {
  Result<PeerProcess> process;  // the error says why the caller could not be identified
  Result<NetnsId> netns;        // the caller's network namespace at accept

  /// PeerProcess::ofSocket(), then its netns().
  static ConnectionPeer identify(int socketFd);
};

}  // namespace hostport::agent::server
