#include "tests/support/subprocess.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <filesystem>

#include "common/unique_fd.h"
#include "tests/support/spawn.h"

namespace hostport::test {
namespace {

constexpr const char* kSearchPath = "/usr/sbin:/usr/bin:/sbin:/bin";

/// write() to the program's stdin, which it may have closed: EPIPE then, without the SIGPIPE
/// that would end the test process (blocked on this thread for the call, and a pending one taken).
ssize_t writeWithoutSigpipe(int fd, const char* data, size_t size) {
  sigset_t pipe;
  sigset_t old;
  ::sigemptyset(&pipe);
  ::sigaddset(&pipe, SIGPIPE);
  ::pthread_sigmask(SIG_BLOCK, &pipe, &old);
  const ssize_t n = ::write(fd, data, size);
  const int error = errno;
  if (n < 0 && error == EPIPE) {
    const timespec now{};
    ::sigtimedwait(&pipe, nullptr, &now);
  }
  ::pthread_sigmask(SIG_SETMASK, &old, nullptr);
  errno = error;
  return n;
}

struct Pipe {
  UniqueFd read;
  UniqueFd write;
};

Result<Pipe> makePipe() {
  int fds[2];
  if (::pipe2(fds, O_CLOEXEC) != 0) return failSystem(ErrorCode::kIo, "pipe2", errno);
  return Pipe{UniqueFd(fds[0]), UniqueFd(fds[1])};
}

void setNonBlocking(int fd) { ::fcntl(fd, F_SETFL, ::fcntl(fd, F_GETFL) | O_NONBLOCK); }

}  // namespace

std::string CommandResult::describe() const {
  std::string text = timedOut     ? "timed out"
                     : termSignal ? "killed by signal " + std::to_string(termSignal)
                                  : "exit " + std::to_string(exitCode);
  return text + "; stdout: " + out + "; stderr: " + err;
}

Result<CommandResult> runCommand(const Command& command) {
  if (command.argv.empty()) return fail(ErrorCode::kInvalidArgument, "empty argv");

  std::vector<std::string> env;
  for (const auto& [key, value] : command.env) env.push_back(key + "=" + value);
  auto in = makePipe();
  auto out = makePipe();
  auto err = makePipe();
  if (!in || !out || !err) return fail(ErrorCode::kIo, "cannot create pipes");

  HOSTPORT_TRY(const pid_t pid,
               spawn({.argv = command.argv,
                      .env = std::move(env),
                      .netns = command.netnsPath.empty() ? SpawnNetns::kCallers : SpawnNetns::kJoin,
                      .netnsPath = command.netnsPath,
                      .stdinFd = in->read.get(),
                      .stdoutFd = out->write.get(),
                      .stderrFd = err->write.get()}));
  UniqueFd pidfd(static_cast<int>(::syscall(SYS_pidfd_open, pid, 0)));
  in->read.reset();
  out->write.reset();
  err->write.reset();

  CommandResult result;
  UniqueFd stdinFd = std::move(in->write);
  if (command.stdinData.empty()) stdinFd.reset();
  setNonBlocking(out->read.get());
  setNonBlocking(err->read.get());
  if (stdinFd.valid()) setNonBlocking(stdinFd.get());
  size_t written = 0;
  const auto deadline = std::chrono::steady_clock::now() + command.timeout;
  bool exited = false;
  char buffer[65536];

  auto drain = [&](UniqueFd& fd, std::string& sink) {
    while (fd.valid()) {
      const ssize_t n = ::read(fd.get(), buffer, sizeof buffer);
      if (n > 0) {
        sink.append(buffer, static_cast<size_t>(n));
      } else if (n == 0) {
        fd.reset();
      } else if (errno != EINTR) {
        break;  // EAGAIN: nothing more for now
      }
    }
  };

  while (!exited || out->read.valid() || err->read.valid()) {
    const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
        deadline - std::chrono::steady_clock::now());
    if (left.count() <= 0) {
      result.timedOut = true;
      break;
    }
    pollfd fds[4] = {{out->read.get(), POLLIN, 0},
                     {err->read.get(), POLLIN, 0},
                     {stdinFd.get(), POLLOUT, 0},
                     {exited ? -1 : pidfd.get(), POLLIN, 0}};
    // Without a pidfd (kernels before 5.3), look for the exit every 10 ms instead.
    const int wait = pidfd.valid() ? static_cast<int>(left.count())
                                   : static_cast<int>(std::min<long>(left.count(), 10));
    const int ready = ::poll(fds, 4, wait);
    if (ready < 0 && errno != EINTR) return failSystem(ErrorCode::kIo, "poll", errno);
    drain(out->read, result.out);
    drain(err->read, result.err);
    if (stdinFd.valid() && (fds[2].revents & (POLLOUT | POLLERR | POLLHUP))) {
      const ssize_t n = writeWithoutSigpipe(stdinFd.get(), command.stdinData.data() + written,
                                            command.stdinData.size() - written);
      if (n > 0) written += static_cast<size_t>(n);
      if ((n < 0 && errno != EAGAIN && errno != EINTR) || written == command.stdinData.size()) {
        stdinFd.reset();  // EPIPE: the program stopped reading, which is its business
      }
    }
    siginfo_t info{};
    const bool gone =
        pidfd.valid()
            ? (fds[3].revents & POLLIN) != 0
            : ::waitid(P_PID, pid, &info, WEXITED | WNOHANG | WNOWAIT) == 0 && info.si_pid == pid;
    if (!exited && gone) {
      exited = true;
      // A grandchild may hold the pipes open: take what is buffered now and stop waiting.
      drain(out->read, result.out);
      drain(err->read, result.err);
      out->read.reset();
      err->read.reset();
    }
  }

  int status = 0;
  if (result.timedOut) ::kill(pid, SIGKILL);
  while (::waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  if (WIFEXITED(status)) result.exitCode = WEXITSTATUS(status);
  if (WIFSIGNALED(status)) result.termSignal = WTERMSIG(status);
  return result;
}

Result<std::string> runOk(const std::vector<std::string>& argv, const std::string& netnsPath) {
  Command command{.argv = argv, .env = {{"PATH", kSearchPath}}, .netnsPath = netnsPath};
  if (!argv.empty() && argv[0].find('/') == std::string::npos) {
    for (const char* dir : {"/usr/sbin", "/usr/bin", "/sbin", "/bin"}) {
      std::filesystem::path candidate = std::filesystem::path(dir) / argv[0];
      if (::access(candidate.c_str(), X_OK) == 0) {
        command.argv[0] = candidate;
        break;
      }
    }
  }
  HOSTPORT_TRY(CommandResult result, runCommand(command));
  std::string line;
  for (const auto& arg : argv) line += (line.empty() ? "" : " ") + arg;
  if (!result.ok()) return fail(ErrorCode::kInternal, line + ": " + result.describe());
  return std::move(result.out);
}

}  // namespace hostport::test
