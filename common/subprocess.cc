#include "common/subprocess.h"

#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <string_view>

#include "common/unique_fd.h"

namespace hostport {
namespace {

struct Pipe {
  UniqueFd read;
  UniqueFd write;
};

Result<Pipe> makePipe() {
  int fds[2];
  if (::pipe2(fds, O_CLOEXEC) != 0) return failSystem(ErrorCode::kIo, "pipe", errno);
  return Pipe{UniqueFd(fds[0]), UniqueFd(fds[1])};
}

/// Blocks SIGPIPE on this thread for its life; one raised meanwhile is taken off before the mask
/// is restored, so it never reaches a process that ignores nothing.
class SigpipeBlocked {
 public:
  SigpipeBlocked() {
    sigemptyset(&pipe_);
    sigaddset(&pipe_, SIGPIPE);
    pthread_sigmask(SIG_BLOCK, &pipe_, &previous_);
  }
  ~SigpipeBlocked() {
    if (!sigismember(&previous_, SIGPIPE)) {
      const timespec now{0, 0};
      while (sigtimedwait(&pipe_, nullptr, &now) >= 0 || errno == EINTR) {
      }
    }
    pthread_sigmask(SIG_SETMASK, &previous_, nullptr);
  }
  SigpipeBlocked(const SigpipeBlocked&) = delete;
  SigpipeBlocked& operator=(const SigpipeBlocked&) = delete;

 private:
  sigset_t pipe_{};
  sigset_t previous_{};
};

std::vector<char*> pointers(const std::vector<std::string>& strings) {
  std::vector<char*> out;
  for (const auto& text : strings) out.push_back(const_cast<char*>(text.c_str()));
  out.push_back(nullptr);
  return out;
}

}  // namespace

bool exchangeWithProgram(ProgramStreams& streams, std::string_view input, std::string& out,
                         std::string& err, std::size_t cap,
                         std::chrono::steady_clock::time_point deadline, int exitFd) {
  const SigpipeBlocked quiet;
  if (input.empty()) streams.input.reset();
  for (const UniqueFd* fd : {&streams.input, &streams.output, &streams.errors}) {
    if (fd->valid()) ::fcntl(fd->get(), F_SETFL, ::fcntl(fd->get(), F_GETFL) | O_NONBLOCK);
  }
  char buffer[65536];
  // Reads what `fd` has now; closes it at its end.
  const auto drain = [&buffer, cap](UniqueFd& fd, std::string& text) {
    while (fd.valid()) {
      const ssize_t got = ::read(fd.get(), buffer, sizeof buffer);
      if (got < 0 && errno == EINTR) continue;
      if (got < 0 && errno == EAGAIN) return;
      if (got <= 0) {
        fd.reset();
        return;
      }
      const std::size_t room = cap - std::min(cap, text.size());
      text.append(buffer, std::min(room, static_cast<std::size_t>(got)));
    }
  };
  while (streams.input.valid() || streams.output.valid() || streams.errors.valid()) {
    const auto left =
        std::chrono::ceil<std::chrono::milliseconds>(deadline - std::chrono::steady_clock::now());
    if (left.count() <= 0) return false;
    pollfd ready[4] = {{streams.input.valid() ? streams.input.get() : -1, POLLOUT, 0},
                       {streams.output.valid() ? streams.output.get() : -1, POLLIN, 0},
                       {streams.errors.valid() ? streams.errors.get() : -1, POLLIN, 0},
                       {exitFd, POLLIN, 0}};
    const int polled = ::poll(ready, 4, static_cast<int>(left.count()));
    if (polled < 0 && errno != EINTR) return false;  // cannot wait: the caller kills it
    if (polled <= 0) continue;
    if (ready[0].revents != 0) {
      const ssize_t wrote = ::write(streams.input.get(), input.data(), input.size());
      if (wrote > 0) input.remove_prefix(static_cast<std::size_t>(wrote));
      if ((wrote < 0 && errno != EAGAIN && errno != EINTR) || input.empty()) {
        streams.input.reset();  // EPIPE: the program stopped reading, which is its business
      }
    }
    if (ready[1].revents != 0) drain(streams.output, out);
    if (ready[2].revents != 0) drain(streams.errors, err);
    if (ready[3].revents != 0) {
      drain(streams.output, out);
      drain(streams.errors, err);
      streams = {};
    }
  }
  return true;
}

bool ProgramOutcome::succeeded() const { return WIFEXITED(status) && WEXITSTATUS(status) == 0; }

std::string ProgramOutcome::describe() const {
  if (WIFEXITED(status)) return "exited " + std::to_string(WEXITSTATUS(status));
  if (WIFSIGNALED(status)) return "was killed by signal " + std::to_string(WTERMSIG(status));
  return "ended with status " + std::to_string(status);
}

Result<ProgramOutcome> runProgram(const ProgramRun& run) {
  if (run.argv.empty()) return fail(ErrorCode::kInternal, "runProgram: no program");
  const std::string& program = run.argv.front();
  HOSTPORT_TRY(Pipe input, makePipe());
  HOSTPORT_TRY(Pipe output, makePipe());
  HOSTPORT_TRY(Pipe errors, makePipe());
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_adddup2(&actions, input.read.get(), STDIN_FILENO);
  posix_spawn_file_actions_adddup2(&actions, output.write.get(), STDOUT_FILENO);
  posix_spawn_file_actions_adddup2(&actions, errors.write.get(), STDERR_FILENO);
  // The program starts with no signal blocked and every one at its default, whatever this
  // thread's mask or the process's dispositions are.
  posix_spawnattr_t attributes;
  posix_spawnattr_init(&attributes);
  sigset_t none, all;
  sigemptyset(&none);
  sigfillset(&all);
  posix_spawnattr_setsigmask(&attributes, &none);
  posix_spawnattr_setsigdefault(&attributes, &all);
  posix_spawnattr_setflags(&attributes, POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETSIGDEF);
  auto argv = pointers(run.argv);
  auto envp = pointers(run.env);
  pid_t pid = 0;
  const int spawned =
      ::posix_spawn(&pid, program.c_str(), &actions, &attributes, argv.data(), envp.data());
  posix_spawn_file_actions_destroy(&actions);
  posix_spawnattr_destroy(&attributes);
  if (spawned != 0) return failSystem(ErrorCode::kIo, "cannot run " + program, spawned);
  input.read.reset();
  output.write.reset();
  errors.write.reset();

  ProgramOutcome outcome;
  ProgramStreams streams{std::move(input.write), std::move(output.read), std::move(errors.read)};
  const bool inTime =
      exchangeWithProgram(streams, run.input, outcome.out, outcome.err, run.outputCap,
                          std::chrono::steady_clock::now() + run.deadline);
  if (!inTime) ::kill(pid, SIGKILL);
  while (::waitpid(pid, &outcome.status, 0) < 0 && errno == EINTR) {
  }
  if (!inTime) {
    return fail(ErrorCode::kUnavailable,
                program + " did not finish within " + std::to_string(run.deadline.count()) + " ms");
  }
  return outcome;
}

}  // namespace hostport
