#include "tests/support/agent_process.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <fstream>
#include <sstream>
#include <thread>

#include "agent/api/routes.h"
#include "common/unique_fd.h"
#include "tests/support/spawn.h"
#include "tests/support/wait.h"

namespace hostport::test {
namespace {

constexpr const char* kSearchPath = "/usr/sbin:/usr/bin:/sbin:/bin";
constexpr std::size_t kLogTailBytes = 8000;
constexpr std::chrono::milliseconds kPollInterval{10};

std::string describeStatus(int status) {
  if (WIFEXITED(status)) return "exit " + std::to_string(WEXITSTATUS(status));
  if (WIFSIGNALED(status)) return "killed by signal " + std::to_string(WTERMSIG(status));
  return "status " + std::to_string(status);
}

std::string socketDir(const TempDir& dir, const AgentOptions& options) {
  return options.socketSubdir.empty() ? dir.path() : (dir / options.socketSubdir).string();
}

}  // namespace

AgentProcess::AgentProcess(TempDir dir, std::string binaryPath, std::string netnsPath,
                           AgentOptions options)
    : dir_(std::move(dir)),
      binaryPath_(std::move(binaryPath)),
      netnsPath_(std::move(netnsPath)),
      options_(std::move(options)),
      socketPath_(socketDir(dir_, options_) + "/agent.sock"),
      podSocketPath_(socketDir(dir_, options_) + "/pod/pod.sock"),
      stateDir_(options_.stateDir.empty() ? dir_.path() + "/state" : options_.stateDir),
      releaseSpool_(dir_.path() + "/released"),
      logPath_(dir_.path() + "/agent.log") {}

AgentProcess::~AgentProcess() { (void)stop(); }

Result<std::unique_ptr<AgentProcess>> AgentProcess::start(std::string binaryPath,
                                                          const Netns& netns,
                                                          AgentOptions options) {
  if (options.privateNetns) {
    return fail(ErrorCode::kInvalidArgument,
                "AgentOptions::privateNetns asks for a netns of its own, yet " + netns.name() +
                    " was given");
  }
  return start(std::move(binaryPath), netns.path(), std::move(options));
}

Result<std::unique_ptr<AgentProcess>> AgentProcess::start(std::string binaryPath,
                                                          AgentOptions options) {
  if (!options.privateNetns) {
    return fail(ErrorCode::kInvalidArgument,
                "an agent without a Netns needs AgentOptions::privateNetns: it must not run in "
                "the host's netns");
  }
  return start(std::move(binaryPath), std::string(), std::move(options));
}

Result<std::unique_ptr<AgentProcess>> AgentProcess::start(std::string binaryPath,
                                                          std::string netnsPath,
                                                          AgentOptions options) {
  if (::access(binaryPath.c_str(), X_OK) != 0) {
    return fail(ErrorCode::kNotFound, "hostport-agent is not executable: " + binaryPath);
  }
  HOSTPORT_TRY(auto dir, TempDir::create());
  std::unique_ptr<AgentProcess> agent(new AgentProcess(std::move(dir), std::move(binaryPath),
                                                       std::move(netnsPath), std::move(options)));
  if (!agent->options_.configYaml.empty()) {
    agent->configPath_ = agent->dir_.path() + "/agent.yaml";
    std::ofstream file(agent->configPath_);
    file << agent->options_.configYaml;
    file.close();
    if (!file) return fail(ErrorCode::kIo, "cannot write " + agent->configPath_);
  }
  HOSTPORT_TRY_VOID(agent->launch());
  HOSTPORT_TRY_VOID(agent->waitReady());
  return agent;
}

Result<void> AgentProcess::launch() {
  std::vector<std::string> args{binaryPath_, "--state-dir", stateDir_, "--socket", socketPath_,
                                "--pod-socket", podSocketPath_, "--log-level", options_.logLevel,
                                "--release-spool", releaseSpool_,
                                // Tests write their own conflists: never the machine's net.d.
                                "--chain-cni", "false"};
  if (!options_.portRange.empty()) {
    args.insert(args.end(), {"--port-range", options_.portRange});
  }
  if (!configPath_.empty()) args.insert(args.end(), {"--config", configPath_});
  if (!options_.reserveLocalPorts) args.push_back("--reserve-local-ports=false");
  args.insert(args.end(), options_.extraArgs.begin(), options_.extraArgs.end());

  UniqueFd devNull(::open("/dev/null", O_RDONLY | O_CLOEXEC));
  if (!devNull.valid()) return failSystem(ErrorCode::kIo, "open /dev/null", errno);
  UniqueFd log(::open(logPath_.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0600));
  if (!log.valid()) return failSystem(ErrorCode::kIo, "open " + logPath_, errno);
  {
    const off_t end = ::lseek(log.get(), 0, SEEK_END);
    runLogOffset_ = end > 0 ? static_cast<std::size_t>(end) : 0;
    const std::string banner = "=== test harness: starting " + binaryPath_ + " ===\n";
    (void)!::write(log.get(), banner.data(), banner.size());
  }
  // A private netns gets lo up, as inPrivateNetns() gives it: a fresh one starts with lo down.
  auto spawned = spawn({.argv = std::move(args),
                        .env = {std::string("PATH=") + kSearchPath},
                        .netns = netnsPath_.empty() ? SpawnNetns::kPrivate : SpawnNetns::kJoin,
                        .netnsPath = netnsPath_,
                        .loopback = netnsPath_.empty() ? Loopback::kUp : Loopback::kAsItIs,
                        .stdinFd = devNull.get(),
                        .stdoutFd = log.get(),
                        .stderrFd = log.get(),
                        .umask = options_.umask});
  if (!spawned) {
    lastExit_ = "not started";
    return std::unexpected(std::move(spawned).error());
  }
  pid_ = *spawned;
  return {};
}

Result<void> AgentProcess::waitReady() {
  const auto deadline = std::chrono::steady_clock::now() + options_.readyTimeout;
  const auto probe = client(std::chrono::milliseconds{500});
  std::string lastError = "not tried";
  while (true) {
    if (reapIfExited()) {
      return fail(ErrorCode::kUnavailable,
                  "hostport-agent exited before it was ready (" + lastExit_ + "); " + describe());
    }
    auto answer = probe.getText(agent::api::kReadyzPath);
    if (answer) return {};
    lastError = answer.error().message;
    if (std::chrono::steady_clock::now() >= deadline) break;
    std::this_thread::sleep_for(kPollInterval);
  }
  auto stopped = stop();
  return fail(ErrorCode::kUnavailable,
              "hostport-agent was not ready within " +
                  std::to_string(options_.readyTimeout.count()) + " ms (last: " + lastError +
                  "; then " + (stopped ? *stopped : stopped.error().message) + "); " + describe());
}

bool AgentProcess::reapIfExited() {
  if (pid_ <= 0) return true;
  int status = 0;
  const pid_t done = ::waitpid(pid_, &status, WNOHANG);
  if (done == pid_ || (done < 0 && errno == ECHILD)) {
    lastExit_ = done == pid_ ? describeStatus(status) : "already reaped";
    pid_ = 0;
    return true;
  }
  return false;
}

bool AgentProcess::waitExit(std::chrono::milliseconds timeout) {
  if (pid_ <= 0) return true;
  UniqueFd pidfd(static_cast<int>(::syscall(SYS_pidfd_open, pid_, 0)));
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  while (!reapIfExited()) {
    const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
        deadline - std::chrono::steady_clock::now());
    if (left.count() <= 0) return false;
    if (pidfd.valid()) {
      pollfd fd{pidfd.get(), POLLIN, 0};
      (void)::poll(&fd, 1, static_cast<int>(left.count()));
    } else {
      std::this_thread::sleep_for(std::min(left, kPollInterval));
    }
  }
  return true;
}

Result<std::string> AgentProcess::kill(int signal) {
  if (reapIfExited()) {
    return fail(ErrorCode::kNotFound, "hostport-agent is not running (" + lastExit_ + ")");
  }
  if (::kill(pid_, signal) != 0) {
    return failSystem(ErrorCode::kIo, "kill " + std::to_string(pid_), errno);
  }
  return reap();
}

Result<void> AgentProcess::killWithoutReaping() {
  // No reapIfExited() first: an agent that already ended on its own stays unreaped, so reap()
  // still tells how it ended.
  if (pid_ <= 0) {
    return fail(ErrorCode::kNotFound, "hostport-agent is not running (" + lastExit_ + ")");
  }
  if (::kill(pid_, SIGKILL) != 0) {
    return failSystem(ErrorCode::kIo, "kill " + std::to_string(pid_), errno);
  }
  return {};
}

Result<std::string> AgentProcess::reap() {
  const pid_t waited = pid_;
  if (!waitExit(options_.stopTimeout)) {
    return fail(ErrorCode::kInternal, "hostport-agent pid " + std::to_string(waited) +
                                          " still runs after " +
                                          std::to_string(options_.stopTimeout.count()) + " ms");
  }
  return lastExit_;
}

Result<std::string> AgentProcess::stop() {
  if (reapIfExited()) return lastExit_;
  if (::kill(pid_, SIGTERM) == 0 && waitExit(options_.stopTimeout)) return lastExit_;
  const pid_t stubborn = pid_;
  ::kill(pid_, SIGKILL);
  if (!waitExit(options_.stopTimeout)) {
    return fail(ErrorCode::kInternal,
                "hostport-agent pid " + std::to_string(stubborn) + " survives SIGKILL");
  }
  return "did not stop on SIGTERM within " + std::to_string(options_.stopTimeout.count()) +
         " ms; " + lastExit_;
}

Result<void> AgentProcess::restart() {
  HOSTPORT_TRY_VOID(stop());
  HOSTPORT_TRY_VOID(launch());
  return waitReady();
}

agent::api::AgentClient AgentProcess::client(std::chrono::milliseconds timeout) const {
  return agent::api::AgentClient::forSocket(socketPath_, timeout);
}

std::string AgentProcess::log() const {
  std::ifstream file(logPath_);
  std::stringstream text;
  text << file.rdbuf();
  return text.str();
}

std::string AgentProcess::runLog() const {
  const std::string text = log();
  return runLogOffset_ < text.size() ? text.substr(runLogOffset_) : std::string();
}

std::string agentUnderTest(const std::string& builtPath) {
  const char* override = std::getenv("HOSTPORT_TEST_AGENT");
  return override && *override ? override : builtPath;
}

bool AgentProcess::waitForLog(std::string_view text, std::chrono::milliseconds timeout) const {
  return waitUntil([&] { return runLog().find(text) != std::string::npos; }, timeout);
}

std::string AgentProcess::describe() const {
  std::string text = log();
  if (text.size() > kLogTailBytes) {
    text = "[...]" + text.substr(text.size() - kLogTailBytes);
  }
  const std::string state =
      pid_ > 0 ? "pid " + std::to_string(pid_) : "not running (" + lastExit_ + ")";
  return "hostport-agent " + state + " (socket " + socketPath_ + "), log:\n" + text;
}

}  // namespace hostport::test
