#pragma once
// The process at the other end of a Unix connection, as the kernel names it, held so that it
// cannot be confused with a later process that reuses its pid. The pod socket's identity, after
// SPIRE's workload API (docs/design.md, "The pod socket"):
// - SO_PEERCRED gives the pid of the process that called connect() (its thread group's id), and
//   its uid;
// - /proc/<pid> is opened at once and the directory fd held: it keeps naming that process (its
//   struct pid), so after it exits, reads through the fd fail even when the number is reused;
// - its start time (stat field 22) is recorded, and compared again before every answer;
// - SO_PEERPIDFD (Linux 6.5), when the kernel has it, closes the one window left: a caller that
//   exited between connect() and the open of /proc/<pid>, whose pid another process got in
//   between. The pidfd names the caller itself, so it must still be alive once /proc/<pid> is
//   open.
// The network namespace is read through the held fd (ns/net), as device and inode: the same
// NetnsId the agent records in a lease at ADD (agent/service/netns_id.h).
//
// A process whose main thread has exited (pthread_exit() in main) while others run is alive: its
// leader shows as a zombie in /proc/<pid>/stat and its ns/ links are gone, so its namespaces are
// read through its live threads (/proc/<pid>/task/<tid>/ns/), which must all be in the same one:
// SO_PEERCRED does not say which thread connected. Only the exit of the whole thread group, the
// leader a zombie and no thread left, is an exit.

#include <sys/types.h>

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "agent/server/caller_identity.h"
#include "agent/server/namespace_origin.h"
#include "agent/server/proc_stat.h"
#include "common/error.h"
#include "common/unique_fd.h"
#include "lease/lease.h"

namespace hostport::agent::server {

class PeerProcess {
 public:
  /// The process that connected `socketFd` (a connected AF_UNIX stream socket). kUnavailable when
  /// the kernel names no pid we can see (a peer in a pid namespace we do not see gets 0) or the
  /// process is already gone; kIo for other failures. Messages name the pid.
  static Result<PeerProcess> ofSocket(int socketFd);
  /// Holds /proc/<pid> of a pid known some other way: ofSocket()'s second half, and tests'.
  static Result<PeerProcess> open(pid_t pid, uid_t uid = 0);

  pid_t pid() const { return pid_; }
  /// SO_PEERCRED's uid, in the agent's user namespace (what open() was given).
  uid_t uid() const { return uid_; }
  uint64_t startTime() const { return startTime_; }

  /// The process's namespace of `kind` ("net", "pid", "user"), opened through the held fd: the
  /// leader's, or with a zombie leader its live threads' (kUnavailable when they differ).
  Result<UniqueFd> openNamespace(std::string_view kind) const;
  /// The text of /proc/<pid>/cgroup, the cgroups the process is in (pod_cgroup.h reads it): the
  /// leader's, or with a zombie leader its live threads' (kUnavailable when they differ).
  Result<std::string> readCgroups() const;
  /// Fails unless the held process is still running with the start time recorded at open:
  /// kUnavailable "process <pid> has exited" (or "... is not the process that connected").
  Result<void> checkUnchanged() const;

 private:
  PeerProcess(pid_t pid, uid_t uid, UniqueFd dir, uint64_t startTime)
      : pid_(pid), uid_(uid), dir_(std::move(dir)), startTime_(startTime) {}
  /// /proc/<pid>/<path>'s stat, for "stat" (the leader) or "task/<tid>/stat".
  Result<ProcStat> readStat(const std::string& path = "stat") const;
  /// The whole of /proc/<pid>/<path>, at most 64 KiB; kUnavailable when the process has exited.
  Result<std::string> readText(const std::string& path) const;
  /// "task/<tid>" of each thread but the leader that has not exited, at most kMaxThreadsRead
  /// looked at; kUnavailable beyond.
  Result<std::vector<std::string>> liveThreads() const;
  /// Fails unless the leader runs, or has exited while other threads still run.
  Result<void> checkGroupAlive(const ProcStat& leader) const;

  pid_t pid_ = 0;
  uid_t uid_ = 0;
  UniqueFd dir_;  // /proc/<pid>, O_DIRECTORY
  uint64_t startTime_ = 0;
};

/// A zombie leader's threads are read one by one, so a process of more threads than this is not
/// identified once its leader has exited.
inline constexpr std::size_t kMaxThreadsRead = 1024;

}  // namespace hostport::agent::server

namespace hostport::agent::server {

/// Who is at the other end of one connection, for a listener that identifies its callers (the
/// pod socket): decided once, at accept, and carried by each of the connection's requests.
struct ConnectionPeer {
  Result<PeerProcess> process;          // the error says why the caller could not be identified
  Result<NetnsId> netns;                // the caller's network namespace at accept
  Result<CallerNamespaces> namespaces;  // who made them (caller_identity.h)
  /// The pod whose cgroup the caller is in (pod_cgroup.h); nullopt for a process in none.
  Result<std::optional<std::string>> podUid;
  /// The pod whose CSI volume holds the socket the caller connected to (PodServer::serveVolume):
  /// set by that socket's listener, from the volume's pod, never from anything the caller says;
  /// nullopt on the pod socket.
  std::optional<std::string> volumePod;

  /// What the per-caller connection cap counts for this caller (caller_identity.h).
  CallerKey key() const;
  /// The caller's pid for a message or a log line; "unknown" when it was not identified.
  std::string pidText() const;

  /// PeerProcess::ofSocket(), then its network namespace, who made its namespaces, and its pod.
  static ConnectionPeer identify(int socketFd, const AgentNamespaces& agent);
};

}  // namespace hostport::agent::server
