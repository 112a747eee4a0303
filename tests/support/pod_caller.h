#pragma once
// A process inside a pod's network namespace that connects to a Unix socket: what the pod socket
// (agent/server/peer_process.h) must identify. The kernel names the process that called
// connect() (SO_PEERCRED), and /proc/<pid>/ns/net is the namespace of that process's main thread,
// so a thread that setns()es is not enough: PodCaller forks a child that joins the netns,
// connects, hands its connected sockets to the test over SCM_RIGHTS and then waits, alive, until
// exit() or the destructor. The test speaks HTTP on the sockets it got (httpGet); the agent still
// sees the child at the other end.
//
// The child runs only syscalls between fork and _exit (the test process has other threads) and
// dies with the test (PR_SET_PDEATHSIG).

#include <sys/types.h>

#include <chrono>
#include <string>
#include <string_view>
#include <vector>

#include "common/error.h"
#include "common/unique_fd.h"

namespace hostport::test {

class PodCaller {
 public:
  /// A child in the netns at `netnsPath` (a /run/netns file or /proc/<pid>/ns/net; empty: the
  /// test's own) connects `connections` sockets (1-200) to `socketPath`.
  static Result<PodCaller> connect(const std::string& netnsPath, const std::string& socketPath,
                                   int connections = 1);
  PodCaller(PodCaller&& other) noexcept;
  PodCaller& operator=(PodCaller&&) = delete;
  PodCaller(const PodCaller&) = delete;
  /// Kills and reaps the child if it still runs.
  ~PodCaller();

  pid_t pid() const { return pid_; }
  /// The first connection; all of them through sockets().
  int socket() const { return sockets_.front().get(); }
  const std::vector<UniqueFd>& sockets() const { return sockets_; }
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
