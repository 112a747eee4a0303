#include "tests/support/spawn.h"

#include <fcntl.h>
#include <net/if.h>
#include <sched.h>
#include <signal.h>
#include <sys/ioctl.h>
#include <sys/mount.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <cerrno>
#include <cstdlib>
#include <string>
#include <string_view>

#include "common/unique_fd.h"

namespace hostport::test {
namespace {

/// The steps of the child that can fail, as reported through the pipe.
enum class Step : int { kDeathSignal, kSetns, kUnshare, kLoopback, kStdio, kExec };

/// What a child that failed writes to the report pipe. `loopbackStep` points into this binary's
/// string literals, which a forked child shares with its parent.
struct ChildFailure {
  Step step = Step::kExec;
  int error = 0;
  const char* loopbackStep = nullptr;
};

std::string stepName(const ChildFailure& failure) {
  switch (failure.step) {
    case Step::kDeathSignal:
      return "PR_SET_PDEATHSIG";
    case Step::kSetns:
      return "setns";
    case Step::kUnshare:
      return "unshare(CLONE_NEWNET)";
    case Step::kLoopback:
      return failure.loopbackStep != nullptr ? failure.loopbackStep : "lo up";
    case Step::kStdio:
      return "dup2";
    case Step::kExec:
      return "execve";
  }
  return "?";
}

/// Makes `fd` the child's descriptor `target`, inheritable across exec.
bool installStdio(int fd, int target) {
  if (fd == target) return ::fcntl(target, F_SETFD, 0) == 0;  // dup2 would keep O_CLOEXEC
  return ::dup2(fd, target) == target;
}

struct ChildPlan {
  pid_t parent;
  SpawnNetns netns;
  int netnsFd;
  Loopback loopback;
  int stdio[3];
  int report;
  bool setUmask;
  mode_t umask;
  char* const* argv;
  char* const* envp;
};

// Only async-signal-safe calls from here on: the parent has other threads.
[[noreturn]] void childMain(const ChildPlan& plan) {
  const auto die = [&plan](Step step, int error, const char* loopbackStep = nullptr) {
    const ChildFailure failure{step, error, loopbackStep};
    (void)!::write(plan.report, &failure, sizeof failure);
    ::_exit(127);
  };
  if (::prctl(PR_SET_PDEATHSIG, SIGKILL) != 0) die(Step::kDeathSignal, errno);
  if (::getppid() != plan.parent) ::_exit(126);  // the parent died before prctl: nobody waits

  struct sigaction dfl {};
  dfl.sa_handler = SIG_DFL;
  for (int signal = 1; signal < NSIG; ++signal) (void)::sigaction(signal, &dfl, nullptr);
  sigset_t none;
  ::sigemptyset(&none);
  ::sigprocmask(SIG_SETMASK, &none, nullptr);

  if (plan.netns == SpawnNetns::kJoin && ::setns(plan.netnsFd, CLONE_NEWNET) != 0) {
    die(Step::kSetns, errno);
  }
  if (plan.netns == SpawnNetns::kPrivate && ::unshare(CLONE_NEWNET) != 0) {
    die(Step::kUnshare, errno);
  }
  if (plan.loopback == Loopback::kUp) {
    const char* failedStep = nullptr;
    if (const int error = bringLoopbackUpRaw(&failedStep); error != 0) {
      die(Step::kLoopback, error, failedStep);
    }
  }
  if (plan.netns != SpawnNetns::kCallers && ::unshare(CLONE_NEWNS) == 0 &&
      ::mount("", "/", nullptr, MS_SLAVE | MS_REC, nullptr) == 0 &&
      ::umount2("/sys", MNT_DETACH) == 0) {
    ::mount("sysfs", "/sys", "sysfs", 0, nullptr);
  }
  if (plan.setUmask) ::umask(plan.umask);
  for (int target = 0; target < 3; ++target) {
    if (!installStdio(plan.stdio[target], target)) die(Step::kStdio, errno);
  }
  // Closed at exec, so `report` still works until then.
  (void)::close_range(3, ~0U, CLOSE_RANGE_CLOEXEC);
  ::execve(plan.argv[0], plan.argv, plan.envp);
  die(Step::kExec, errno);
  ::_exit(127);  // not reached: die() exits
}

}  // namespace

int bringLoopbackUpRaw(const char** failedStep) noexcept {
  const int fd = ::socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
  if (fd < 0) {
    *failedStep = "socket";
    return errno;
  }
  ifreq request{};
  constexpr std::string_view kLo = "lo";
  for (std::size_t i = 0; i < kLo.size(); ++i) request.ifr_name[i] = kLo[i];
  int error = 0;
  if (::ioctl(fd, SIOCGIFFLAGS, &request) != 0) {
    *failedStep = "SIOCGIFFLAGS lo";
    error = errno;
  } else {
    request.ifr_flags |= IFF_UP;
    if (::ioctl(fd, SIOCSIFFLAGS, &request) != 0) {
      *failedStep = "SIOCSIFFLAGS lo up";
      error = errno;
    }
  }
  ::close(fd);
  return error;
}

Result<pid_t> spawn(const SpawnRequest& request) {
  if (request.argv.empty()) return fail(ErrorCode::kInvalidArgument, "empty argv");
  if (request.loopback == Loopback::kUp && request.netns == SpawnNetns::kCallers) {
    return fail(ErrorCode::kInvalidArgument,
                "Loopback::kUp in the caller's netns: it is not the child's to change");
  }
  if ((request.netns == SpawnNetns::kJoin) == request.netnsPath.empty()) {
    return fail(ErrorCode::kInvalidArgument,
                "a netns path goes with SpawnNetns::kJoin, and only with it");
  }
  std::vector<std::string> argStrings = request.argv;
  std::vector<std::string> envStrings = request.env;
  // A sanitizer build's agent and plugin report where the test run says (scripts/test.sh's
  // log_path), so a leak at an agent's exit fails the run even though no test looks for it.
  for (const char* name : {"ASAN_OPTIONS", "UBSAN_OPTIONS", "LSAN_OPTIONS"}) {
    const std::string prefix = std::string(name) + "=";
    const char* value = std::getenv(name);
    if (value != nullptr && std::ranges::none_of(envStrings, [&](const std::string& entry) {
          return entry.starts_with(prefix);
        })) {
      envStrings.push_back(prefix + value);
    }
  }
  std::vector<char*> argv;
  for (auto& arg : argStrings) argv.push_back(arg.data());
  argv.push_back(nullptr);
  std::vector<char*> envp;
  for (auto& entry : envStrings) envp.push_back(entry.data());
  envp.push_back(nullptr);

  UniqueFd netns;
  if (request.netns == SpawnNetns::kJoin) {
    netns.reset(::open(request.netnsPath.c_str(), O_RDONLY | O_CLOEXEC));
    if (!netns.valid()) return failSystem(ErrorCode::kIo, "open " + request.netnsPath, errno);
  }
  int reportFds[2];
  if (::pipe2(reportFds, O_CLOEXEC) != 0) return failSystem(ErrorCode::kIo, "pipe2", errno);
  UniqueFd reportRead(reportFds[0]);
  UniqueFd reportWrite(reportFds[1]);

  const ChildPlan plan{.parent = ::getpid(),
                       .netns = request.netns,
                       .netnsFd = netns.get(),
                       .loopback = request.loopback,
                       .stdio = {request.stdinFd, request.stdoutFd, request.stderrFd},
                       .report = reportWrite.get(),
                       .setUmask = request.umask.has_value(),
                       .umask = request.umask.value_or(0),
                       .argv = argv.data(),
                       .envp = envp.data()};
  const pid_t pid = ::fork();
  if (pid < 0) return failSystem(ErrorCode::kIo, "fork", errno);
  if (pid == 0) childMain(plan);
  reportWrite.reset();

  // The pipe closes at the exec; before that, a failed step writes its report.
  ChildFailure failure;
  ssize_t n;
  while ((n = ::read(reportRead.get(), &failure, sizeof failure)) < 0 && errno == EINTR) {
  }
  if (n != sizeof failure) return pid;
  int status = 0;
  while (::waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  const std::string what = "cannot start " + request.argv[0];
  return failSystem(ErrorCode::kIo,
                    failure.step == Step::kExec ? what : what + ": " + stepName(failure),
                    failure.error);
}

}  // namespace hostport::test
