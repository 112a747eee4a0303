#pragma once
// A real hostport-agent process for root tests, running inside a network namespace so that its
// sock_diag probe and net.ipv4.ip_local_reserved_ports see only that netns: a named one (the
// node netns of a CniNode), or with AgentOptions::privateNetns one of its own per run (lo up).
//
// The agent gets a private state dir, control socket and pod socket in its own temp dir, and
// counts as started only once GET /readyz answers on its socket. It runs as a ServerProcess
// (server_process.h): its log in the temp dir, stopped by its pid alone, never outliving the test
// thread that started it, so start() and restart() must be called from a thread that lives as
// long as the agent should (a test's own thread).

#include <sys/types.h>

#include <chrono>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "agent/api/agent_client.h"
#include "common/error.h"
#include "tests/support/netns.h"
#include "tests/support/server_process.h"
#include "tests/support/temp_dir.h"

namespace hostport::test {

struct AgentOptions {
  std::string portRange;          // --port-range; empty: the agent's default
  std::string configYaml;         // written to <dir>/agent.yaml and passed as --config; empty: none
  bool reserveLocalPorts = true;  // false: --reserve-local-ports=false
  std::string logLevel = "debug";
  std::vector<std::string> extraArgs;
  std::chrono::milliseconds readyTimeout{15'000};
  std::chrono::milliseconds stopTimeout{5'000};  // SIGTERM to SIGKILL
  // Each run unshares a fresh netns of its own, with lo up as inPrivateNetns() has it, instead of
  // joining one.
  bool privateNetns = false;
  // --state-dir; empty: "state" in the agent's temp dir. A test that needs the state dir on a
  // file system of its own (a small tmpfs it fills) mounts one and names it here.
  std::string stateDir;
  // The agent's umask; none: the test process's.
  std::optional<mode_t> umask;
  // Where both sockets go under the agent's temp dir: "run/hostport" gives run/hostport/agent.sock
  // and run/hostport/pod/pod.sock, directories the agent makes. Empty: the temp dir itself.
  std::string socketSubdir;
};

/// The agent under test: $HOSTPORT_TEST_AGENT when set (an older build, to show a regression test
/// fails on it), else `builtPath`. The agent's twin of pluginUnderTest() (cni_node.h).
std::string agentUnderTest(const std::string& builtPath);

class AgentProcess {
 public:
  /// Starts `binaryPath` (the built hostport-agent) inside `netns` and waits until /readyz
  /// answers. The error quotes the agent's log when it exits or does not become ready.
  static Result<std::unique_ptr<AgentProcess>> start(std::string binaryPath, const Netns& netns,
                                                     AgentOptions options = {});
  /// Starts `binaryPath` in a network namespace of its own; `options.privateNetns` must be set,
  /// so that an agent never runs in the test's (the host's) netns by mistake.
  static Result<std::unique_ptr<AgentProcess>> start(std::string binaryPath, AgentOptions options);
  AgentProcess(const AgentProcess&) = delete;
  AgentProcess& operator=(const AgentProcess&) = delete;
  /// Stops the agent if it is still running (see stop()).
  ~AgentProcess();

  const std::string& socketPath() const { return socketPath_; }
  /// The pod socket (--pod-socket), alone in a directory of the temp dir.
  const std::string& podSocketPath() const { return podSocketPath_; }
  const std::string& stateDir() const { return stateDir_; }
  /// Where the agent reads release notes (--release-spool); a plugin talking to this agent must
  /// leave its notes here (its `releaseSpool` key).
  const std::string& releaseSpool() const { return releaseSpool_; }
  const std::string& logPath() const { return logPath_; }
  /// The --config file (empty without options.configYaml); a test may rewrite it.
  const std::string& configPath() const { return configPath_; }
  /// The running agent's pid; 0 once it has exited and been reaped.
  pid_t pid() const { return server_.pid(); }
  bool running() const { return server_.running(); }

  /// A client for the control socket (what the plugin and hostportctl use).
  agent::api::AgentClient client(std::chrono::milliseconds timeout = std::chrono::milliseconds{
                                     5'000}) const;

  // The process's own controls, as ServerProcess has them (server_process.h). restart() keeps
  // the flags, state dir and sockets and waits for /readyz like start().
  Result<std::string> kill(int signal) { return server_.kill(signal); }
  Result<void> killWithoutReaping() { return server_.killWithoutReaping(); }
  Result<std::string> reap() { return server_.reap(); }
  Result<std::string> stop() { return server_.stop(); }
  Result<void> restart() { return server_.restart(); }
  /// The agent's stderr: all runs, the current run. What the agent logs on another thread (the
  /// reconciler's passes, the publisher, a reload) is waited for with waitForLog(), never read
  /// once.
  std::string log() const { return server_.log(); }
  std::string runLog() const { return server_.runLog(); }
  bool waitForLog(std::string_view text,
                  std::chrono::milliseconds timeout = std::chrono::seconds(10)) const {
    return server_.waitForLog(text, timeout);
  }
  /// "hostport-agent (socket ...) pid N, log:\n..." for assertion messages.
  std::string describe() const { return server_.describe(); }

 private:
  AgentProcess(TempDir dir, std::string binaryPath, std::string netnsPath, AgentOptions options);
  static Result<std::unique_ptr<AgentProcess>> start(std::string binaryPath, std::string netnsPath,
                                                     AgentOptions options);
  std::vector<std::string> commandLine() const;

  TempDir dir_;
  std::string binaryPath_;
  std::string netnsPath_;  // empty with privateNetns: each run unshares its own
  AgentOptions options_;
  std::string socketPath_;
  std::string podSocketPath_;
  std::string stateDir_;
  std::string releaseSpool_;
  std::string logPath_;
  std::string configPath_;
  ServerProcess server_;
};

}  // namespace hostport::test
