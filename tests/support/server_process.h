#pragma once
// A real server process for root tests (hostport-agent, hostport-admission), the one way the
// support library runs a program that keeps running:
// - started by the fork/exec step that also runs the CNI plugin (spawn.h), inside a network
//   namespace: a named one, or a fresh one of its own per run (lo up), never the test's;
// - its stdout and stderr appended to a log file that failure messages quote (describe()), each
//   run after a banner line, so runLog() is the current run's alone;
// - counted as started only once the caller's readiness probe succeeds: a server whose port is
//   bound but whose start is not finished is not ready, so the probe asks the server itself;
// - stopped by its pid alone: SIGTERM, then SIGKILL after a grace period, from the destructor at
//   the latest. PR_SET_PDEATHSIG (spawn.h) ties it to the thread that started it, so start() and
//   restart() must be called from a thread that lives as long as the server should (a test's own).

#include <sys/types.h>

#include <chrono>
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "common/error.h"

namespace hostport::test {

struct ServerSpec {
  std::string name;               // "hostport-agent (socket /tmp/...)": how messages name it
  std::vector<std::string> argv;  // argv[0] is the binary's path
  std::string netnsPath;          // empty: each run unshares a fresh netns of its own
  std::string logPath;
  // Succeeds once the server answers; polled until readyTimeout, its last error quoted. Empty:
  // started is ready (a test that waits for something else itself).
  std::function<Result<void>()> ready;
  std::optional<mode_t> umask;  // none: the test process's
  std::chrono::milliseconds readyTimeout{15'000};
  std::chrono::milliseconds stopTimeout{5'000};  // SIGTERM to SIGKILL, and each wait for an exit
};

class ServerProcess {
 public:
  explicit ServerProcess(ServerSpec spec);
  ServerProcess(const ServerProcess&) = delete;
  ServerProcess& operator=(const ServerProcess&) = delete;
  /// Stops the server if it is still running (see stop()).
  ~ServerProcess();

  /// Starts a run and waits until `ready` succeeds. The error says how the server ended when it
  /// exited first, or what the probe last said, and quotes the log; a server that did not become
  /// ready is stopped.
  Result<void> start();
  /// Stops the server if it runs and starts it again with the same spec.
  Result<void> restart();

  /// The running server's pid; 0 once it has exited and been reaped.
  pid_t pid() const { return pid_; }
  bool running() const { return pid_ > 0; }
  const std::string& logPath() const { return spec_.logPath; }

  /// Sends `signal` and waits (up to stopTimeout) for the exit; returns how it ended ("killed by
  /// signal 9", "exit 0"). An error when it is not running or outlives the timeout.
  Result<std::string> kill(int signal);
  /// Sends SIGKILL and returns at once: a crash test kills the server in the middle of its
  /// clients' requests. reap() (or restart(), stop(), the destructor) reaps.
  Result<void> killWithoutReaping();
  /// Waits (up to stopTimeout) for the exit and reaps; returns how it ended, as kill() does.
  Result<std::string> reap();
  /// SIGTERM, then SIGKILL after stopTimeout. Returns how it ended; nothing to do when it is not
  /// running.
  Result<std::string> stop();

  /// Everything the server has written so far (all of its runs).
  std::string log() const;
  /// What the current (latest) run has written.
  std::string runLog() const;
  /// Waits up to `timeout` until runLog() holds `text`. What a server logs on another thread, or
  /// after the answer a test waited for, may not be written yet: a running server's log is waited
  /// for, never read once.
  bool waitForLog(std::string_view text,
                  std::chrono::milliseconds timeout = std::chrono::seconds(10)) const;
  /// "<name> pid N, log:\n..." (the log's tail) for assertion messages.
  std::string describe() const;

 private:
  Result<void> launch();
  Result<void> waitReady();
  /// Reaps the server if it has exited; true when it is gone.
  bool reapIfExited();
  /// Waits up to `timeout` for the exit and reaps.
  bool waitExit(std::chrono::milliseconds timeout);

  ServerSpec spec_;
  pid_t pid_ = 0;
  std::string lastExit_ = "not started";
  std::size_t runLogOffset_ = 0;  // where the current run starts in the log file
};

}  // namespace hostport::test
