#include "tests/support/server_process.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <fstream>
#include <sstream>
#include <thread>

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

}  // namespace

ServerProcess::ServerProcess(ServerSpec spec) : spec_(std::move(spec)) {}

ServerProcess::~ServerProcess() { (void)stop(); }

Result<void> ServerProcess::start() {
  if (spec_.argv.empty() || ::access(spec_.argv.front().c_str(), X_OK) != 0) {
    return fail(ErrorCode::kNotFound,
                spec_.name + " is not executable: " +
                    (spec_.argv.empty() ? std::string("(no argv)") : spec_.argv.front()));
  }
  HOSTPORT_TRY_VOID(launch());
  return waitReady();
}

Result<void> ServerProcess::restart() {
  HOSTPORT_TRY_VOID(stop());
  return start();
}

Result<void> ServerProcess::launch() {
  UniqueFd devNull(::open("/dev/null", O_RDONLY | O_CLOEXEC));
  if (!devNull.valid()) return failSystem(ErrorCode::kIo, "open /dev/null", errno);
  UniqueFd log(::open(spec_.logPath.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0600));
  if (!log.valid()) return failSystem(ErrorCode::kIo, "open " + spec_.logPath, errno);
  {
    const off_t end = ::lseek(log.get(), 0, SEEK_END);
    runLogOffset_ = end > 0 ? static_cast<std::size_t>(end) : 0;
    const std::string banner = "=== test harness: starting " + spec_.argv.front() + " ===\n";
    (void)!::write(log.get(), banner.data(), banner.size());
  }
  // A private netns gets lo up, as inPrivateNetns() gives it: a fresh one starts with lo down.
  const bool privateNetns = spec_.netnsPath.empty();
  auto spawned = spawn({.argv = spec_.argv,
                        .env = {std::string("PATH=") + kSearchPath},
                        .netns = privateNetns ? SpawnNetns::kPrivate : SpawnNetns::kJoin,
                        .netnsPath = spec_.netnsPath,
                        .loopback = privateNetns ? Loopback::kUp : Loopback::kAsItIs,
                        .stdinFd = devNull.get(),
                        .stdoutFd = log.get(),
                        .stderrFd = log.get(),
                        .umask = spec_.umask});
  if (!spawned) {
    lastExit_ = "not started";
    return std::unexpected(std::move(spawned).error());
  }
  pid_ = *spawned;
  return {};
}

Result<void> ServerProcess::waitReady() {
  const auto deadline = std::chrono::steady_clock::now() + spec_.readyTimeout;
  std::string lastError = "not tried";
  while (true) {
    if (reapIfExited()) {
      return fail(ErrorCode::kUnavailable,
                  spec_.name + " exited before it was ready (" + lastExit_ + "); " + describe());
    }
    if (!spec_.ready) return {};
    auto answer = spec_.ready();
    if (answer) return {};
    lastError = answer.error().message;
    if (std::chrono::steady_clock::now() >= deadline) break;
    std::this_thread::sleep_for(kPollInterval);
  }
  auto stopped = stop();
  return fail(ErrorCode::kUnavailable,
              spec_.name + " was not ready within " + std::to_string(spec_.readyTimeout.count()) +
                  " ms (last: " + lastError + "; then " +
                  (stopped ? *stopped : stopped.error().message) + "); " + describe());
}

bool ServerProcess::reapIfExited() {
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

bool ServerProcess::waitExit(std::chrono::milliseconds timeout) {
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

Result<std::string> ServerProcess::kill(int signal) {
  if (reapIfExited()) {
    return fail(ErrorCode::kNotFound, spec_.name + " is not running (" + lastExit_ + ")");
  }
  if (::kill(pid_, signal) != 0) {
    return failSystem(ErrorCode::kIo, "kill " + std::to_string(pid_), errno);
  }
  return reap();
}

Result<void> ServerProcess::killWithoutReaping() {
  // No reapIfExited() first: a server that already ended on its own stays unreaped, so reap()
  // still tells how it ended.
  if (pid_ <= 0) {
    return fail(ErrorCode::kNotFound, spec_.name + " is not running (" + lastExit_ + ")");
  }
  if (::kill(pid_, SIGKILL) != 0) {
    return failSystem(ErrorCode::kIo, "kill " + std::to_string(pid_), errno);
  }
  return {};
}

Result<std::string> ServerProcess::reap() {
  const pid_t waited = pid_;
  if (!waitExit(spec_.stopTimeout)) {
    return fail(ErrorCode::kInternal, spec_.name + " pid " + std::to_string(waited) +
                                          " still runs after " +
                                          std::to_string(spec_.stopTimeout.count()) + " ms");
  }
  return lastExit_;
}

Result<std::string> ServerProcess::stop() {
  if (reapIfExited()) return lastExit_;
  if (::kill(pid_, SIGTERM) == 0 && waitExit(spec_.stopTimeout)) return lastExit_;
  const pid_t stubborn = pid_;
  ::kill(pid_, SIGKILL);
  if (!waitExit(spec_.stopTimeout)) {
    return fail(ErrorCode::kInternal,
                spec_.name + " pid " + std::to_string(stubborn) + " survives SIGKILL");
  }
  return "did not stop on SIGTERM within " + std::to_string(spec_.stopTimeout.count()) + " ms; " +
         lastExit_;
}

std::string ServerProcess::log() const {
  std::ifstream file(spec_.logPath);
  std::stringstream text;
  text << file.rdbuf();
  return text.str();
}

std::string ServerProcess::runLog() const {
  const std::string text = log();
  return runLogOffset_ < text.size() ? text.substr(runLogOffset_) : std::string();
}

bool ServerProcess::waitForLog(std::string_view text, std::chrono::milliseconds timeout) const {
  return waitUntil([&] { return runLog().find(text) != std::string::npos; }, timeout);
}

std::string ServerProcess::describe() const {
  std::string text = log();
  if (text.size() > kLogTailBytes) {
    text = "[...]" + text.substr(text.size() - kLogTailBytes);
  }
  const std::string state =
      pid_ > 0 ? "pid " + std::to_string(pid_) : "not running (" + lastExit_ + ")";
  return spec_.name + " " + state + ", log:\n" + text;
}

}  // namespace hostport::test
