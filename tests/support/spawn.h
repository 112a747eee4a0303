#pragma once
// The one fork/exec step of the support library: runCommand (subprocess.h) and AgentProcess
// (agent_process.h) both start their programs here, so a CNI plugin and an agent get the same
// child. Internal to tests/support; tests use those two.
//
// Between fork and exec the child, with async-signal-safe calls only (the test process has other
// threads):
// - dies with the thread that forked it (PR_SET_PDEATHSIG): a program never outlives a test that
//   a ctest timeout killed. Both launchers wait for their child on the thread that started it;
// - resets every signal's disposition and unblocks them all (an ignored SIGPIPE would survive
//   exec);
// - joins a named netns or unshares a fresh one (or stays in the caller's), and in the same
//   mount dance as `ip netns exec` gets a private mount namespace whose /sys shows that netns
//   (best effort, as in iproute2);
// - brings `lo` up when asked: a fresh netns starts with it down;
// - sets the umask it is given;
// - takes stdin, stdout and stderr from the given descriptors and marks every other one
//   close-on-exec, so nothing the test process opened without O_CLOEXEC (a client's socket)
//   stays open in the program (best effort: close_range needs Linux 5.11);
// - execs. A step that fails is reported back through a close-on-exec pipe, and spawn() returns
//   it after reaping the child.

#include <sys/types.h>

#include <optional>
#include <string>
#include <vector>

#include "common/error.h"

namespace hostport::test {

/// Which network namespace the child runs in.
enum class SpawnNetns {
  kCallers,  // the caller's (the test's own)
  kJoin,     // the one at SpawnRequest::netnsPath
  kPrivate,  // a fresh one of its own (unshare)
};

/// What the child does with `lo` in its netns. A fresh netns has it down, a named one made by
/// Netns::create() up; kUp is refused in the caller's netns, which is not the child's to change.
enum class Loopback { kAsItIs, kUp };

struct SpawnRequest {
  std::vector<std::string> argv;  // argv[0] is the executable path (no PATH search)
  std::vector<std::string> env;   // "KEY=value" each; only the sanitizers' options are inherited
  SpawnNetns netns = SpawnNetns::kCallers;
  std::string netnsPath;  // with kJoin
  Loopback loopback = Loopback::kAsItIs;
  int stdinFd = -1;  // each must be open; the child gets them as 0, 1 and 2
  int stdoutFd = -1;
  int stderrFd = -1;
  std::optional<mode_t> umask;  // the child's; none: the test process's
};

/// Forks and execs `request`; the child's pid once the exec has succeeded. When a step before it
/// fails the child is reaped and the error says "cannot start <argv[0]>: <strerror>" (exec) or
/// "cannot start <argv[0]>: <step>: <strerror>" (setns, unshare, ...), with the errno as cause.
Result<pid_t> spawn(const SpawnRequest& request);

/// Brings `lo` up in the calling thread's netns with syscalls only, so a child may call it between
/// fork and exec. 0 on success; otherwise the errno, with `*failedStep` naming the call ("socket",
/// "SIOCGIFFLAGS lo", "SIOCSIFFLAGS lo up").
int bringLoopbackUpRaw(const char** failedStep) noexcept;

}  // namespace hostport::test
