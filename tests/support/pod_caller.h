#pragma once
// A process inside a pod's network namespace that connects to a Unix socket: what the pod socket
// (agent/server/peer_process.h) must identify. The kernel names the process that called
// connect() (SO_PEERCRED), and /proc/<pid>/ns/net is the namespace of that process's main thread,
// so a thread that setns()es is not enough: PodCaller forks a child that joins the netns,
// connects, hands its connected sockets to the test over SCM_RIGHTS (closing its own copies, so
// that the test's close is the client's) and then waits, alive, until exit() or the destructor.
// The test speaks HTTP on the sockets it got (httpGet); the agent still sees the child at the
// other end.
//
// CallerSpec makes the other callers the pod socket must tell apart: a user that makes namespaces
// of its own (`unshare -Urn` as uid 65534), the processes of one container (a pid namespace of
// their own), a process whose main thread has exited while another runs (pthread_exit()), and a
// process in a pod's cgroup (a hostNetwork pod's, in the node's netns).
//
// The child runs only syscalls between fork and _exit (the test process has other threads) and
// dies with the test (PR_SET_PDEATHSIG).

#include <sys/types.h>

#include <chrono>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "common/error.h"
#include "common/unique_fd.h"

namespace hostport::test {

/// When the caller's main thread exits, leaving one other thread of it running (what
/// pthread_exit() in main does): its leader is then a zombie while the process lives.
enum class LeaderExit {
  kNever,
  kBeforeConnect,  // the other thread connects once the main thread has exited
  kAfterConnect,   // the main thread connects, then exits
};

/// Who the caller is, in the order the child becomes it.
struct CallerSpec {
  std::string cgroupProcs;   // join this cgroup (its cgroup.procs: tests/support/pod_cgroup.h)
  std::string netnsPath;     // join this netns (a /run/netns file, /proc/<pid>/ns/net); "": stay
  std::string pidnsPath;     // fork into this pid namespace (pidnsForChildren() of another)
  bool newPidns = false;     // fork into a pid namespace of its own, as pid 1 of a container
  std::optional<uid_t> uid;  // then become this uid (and gid, no supplementary groups)
  bool newUserAndNetns = false;  // then unshare(CLONE_NEWUSER | CLONE_NEWNET): `unshare -Urn`
  LeaderExit leaderExit = LeaderExit::kNever;
  int connections = 1;  // 1-200
};

class PodCaller {
 public:
  /// A child in the netns at `netnsPath` (a /run/netns file or /proc/<pid>/ns/net; empty: the
  /// test's own) connects `connections` sockets (1-200) to `socketPath`.
  static Result<PodCaller> connect(const std::string& netnsPath, const std::string& socketPath,
                                   int connections = 1);
  /// A child made as `spec` says connects to `socketPath`.
  static Result<PodCaller> start(const std::string& socketPath, const CallerSpec& spec);
  PodCaller(PodCaller&& other) noexcept;
  PodCaller& operator=(PodCaller&&) = delete;
  PodCaller(const PodCaller&) = delete;
  /// Kills and reaps the child if it still runs.
  ~PodCaller();

  /// The child's pid: the caller's, unless it forked into a pid namespace (then its parent's).
  pid_t pid() const { return pid_; }
  /// The first connection; all of them through sockets().
  int socket() const { return sockets_.front().get(); }
  const std::vector<UniqueFd>& sockets() const { return sockets_; }
  /// Closes the test's copies of the connections: the child closed its own, so the server sees the
  /// client go.
  void closeSockets() { sockets_.clear(); }
  /// The pid namespace the child's children join: with CallerSpec::newPidns, the caller's own.
  std::string pidnsForChildren() const {
    return "/proc/" + std::to_string(pid_) + "/ns/pid_for_children";
  }
  /// Lets the child exit and reaps it: its pid is free for the kernel to give out again, and
  /// the connections it made stay open here.
  Result<void> exit();

 private:
  PodCaller(pid_t pid, UniqueFd release, std::vector<UniqueFd> sockets)
      : pid_(pid), release_(std::move(release)), sockets_(std::move(sockets)) {}
  pid_t pid_ = 0;
  UniqueFd release_;  // the child exits when this closes
  std::vector<UniqueFd> sockets_;
};

struct HttpAnswer {
  unsigned status = 0;
  std::string body;
};

/// Sends "GET <target>" (or `method`) on a connected socket, keeping the connection alive, and
/// reads one answer (Content-Length framed). kUnavailable when the server closes the connection
/// without an answer; the deadline only keeps a broken test from hanging.
Result<HttpAnswer> httpRequest(int socket, std::string_view method, std::string_view target,
                               std::chrono::milliseconds deadline = std::chrono::seconds(90));
inline Result<HttpAnswer> httpGet(int socket, std::string_view target) {
  return httpRequest(socket, "GET", target);
}

/// A connection to `socketPath` from this process (the test's own netns).
Result<UniqueFd> connectUnix(const std::string& socketPath);

}  // namespace hostport::test
