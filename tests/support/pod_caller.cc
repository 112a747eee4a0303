#include "tests/support/pod_caller.h"

#include <fcntl.h>
#include <grp.h>
#include <poll.h>
#include <sched.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <mutex>

namespace hostport::test {
namespace {

constexpr int kMaxConnections = 200;  // below SCM_MAX_FD (253): one message carries them all

Result<sockaddr_un> unixAddress(const std::string& path) {
  sockaddr_un address{};
  address.sun_family = AF_UNIX;
  if (path.size() >= sizeof address.sun_path) {
    return fail(ErrorCode::kInvalidArgument, "socket path too long: " + path);
  }
  std::memcpy(address.sun_path, path.c_str(), path.size() + 1);
  return address;
}

/// What the child does, prepared before fork.
struct ChildPlan {
  int cgroupProcsFd = -1;
  int netnsFd = -1;
  int pidnsFd = -1;
  bool newPidns = false;
  bool setUid = false;
  uid_t uid = 0;
  bool newUserAndNetns = false;
  LeaderExit leaderExit = LeaderExit::kNever;
  sockaddr_un address{};
  int connections = 1;
  int channel = -1;
  int release = -1;
  int releaseWriter = -1;
};

// Exit codes of the child, which name the failed step for the parent's message.
enum ChildStep : int {
  kSetnsNet = 10,
  kJoinCgroup = 30,
  kSocket,
  kConnect,
  kSendmsg,
  kSetnsPid,
  kUnsharePid,
  kFork,
  kInnerKilled,
  kSetuid,
  kUnshareUserNet,
  kClone,
  kLeaderNeverExited,
};

// The child's state, in its own copy of this memory: static, since the main thread that sets it
// may exit before the thread that reads it.
ChildPlan gPlan;
int gFds[kMaxConnections];
alignas(64) char gThreadStack[64 * 1024];
std::mutex gPlanMutex;  // one start() at a time writes gPlan and forks

[[noreturn]] void childExit(int code) {
  // exit_group, not _exit's view of it: with LeaderExit the caller is a thread.
  ::syscall(SYS_exit_group, code);
  __builtin_unreachable();
}

void connectAll() {
  for (int i = 0; i < gPlan.connections; ++i) {
    gFds[i] = ::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (gFds[i] < 0) childExit(kSocket);
    if (::connect(gFds[i], reinterpret_cast<const sockaddr*>(&gPlan.address),
                  sizeof gPlan.address) != 0) {
      childExit(kConnect);
    }
  }
}

/// Sends the connections to the test and closes the child's copies: the test's close is then the
/// client's.
void handOver() {
  alignas(cmsghdr) char control[CMSG_SPACE(sizeof(int) * kMaxConnections)] = {};
  char byte = 'x';
  iovec vector{&byte, 1};
  msghdr message{};
  message.msg_iov = &vector;
  message.msg_iovlen = 1;
  message.msg_control = control;
  message.msg_controllen = CMSG_SPACE(sizeof(int) * gPlan.connections);
  cmsghdr* header = CMSG_FIRSTHDR(&message);
  header->cmsg_level = SOL_SOCKET;
  header->cmsg_type = SCM_RIGHTS;
  header->cmsg_len = CMSG_LEN(sizeof(int) * gPlan.connections);
  std::memcpy(CMSG_DATA(header), gFds, sizeof(int) * gPlan.connections);
  if (::sendmsg(gPlan.channel, &message, 0) != 1) childExit(kSendmsg);
  for (int i = 0; i < gPlan.connections; ++i) ::close(gFds[i]);
}

[[noreturn]] void waitForRelease() {
  char ignored;
  while (::read(gPlan.release, &ignored, 1) < 0 && errno == EINTR) {
  }
  childExit(0);
}

/// True once /proc/self/stat, the thread group leader's, says 'Z'.
bool leaderIsZombie() {
  const int fd = ::open("/proc/self/stat", O_RDONLY | O_CLOEXEC);
  if (fd < 0) return false;
  char text[512];
  const ssize_t got = ::read(fd, text, sizeof text);
  ::close(fd);
  for (ssize_t i = got - 1; i > 0; --i) {
    if (text[i] == ')') return i + 2 < got && text[i + 2] == 'Z';
  }
  return false;
}

/// The thread that outlives the main thread: it waits for the leader to be a zombie, connects if
/// the leader did not, hands the connections over, and holds the process until released.
int outlivingThread(void*) {
  for (int i = 0; !leaderIsZombie(); ++i) {
    if (i == 10'000) childExit(kLeaderNeverExited);
    const timespec pause{0, 1'000'000};
    ::nanosleep(&pause, nullptr);
  }
  if (gPlan.leaderExit == LeaderExit::kBeforeConnect) connectAll();
  handOver();
  waitForRelease();
}

/// The child: syscalls only. Exit codes name the failed step (ChildStep).
[[noreturn]] void runChild() {
  ::prctl(PR_SET_PDEATHSIG, SIGKILL);
  ::close(gPlan.releaseWriter);  // or the child's own copy keeps its read from ever seeing EOF
  // "0" moves the writer itself, in cgroup v1 and v2 alike.
  if (gPlan.cgroupProcsFd >= 0 && ::write(gPlan.cgroupProcsFd, "0", 1) != 1) ::_exit(kJoinCgroup);
  if (gPlan.netnsFd >= 0 && ::setns(gPlan.netnsFd, CLONE_NEWNET) != 0) ::_exit(kSetnsNet);
  if (gPlan.pidnsFd >= 0 && ::setns(gPlan.pidnsFd, CLONE_NEWPID) != 0) ::_exit(kSetnsPid);
  if (gPlan.newPidns && ::unshare(CLONE_NEWPID) != 0) ::_exit(kUnsharePid);
  if (gPlan.pidnsFd >= 0 || gPlan.newPidns) {
    // Only the children of this process are in the pid namespace: the caller is one.
    const pid_t inner = ::fork();
    if (inner < 0) ::_exit(kFork);
    if (inner > 0) {
      int status = 0;
      while (::waitpid(inner, &status, 0) < 0 && errno == EINTR) {
      }
      ::_exit(WIFEXITED(status) ? WEXITSTATUS(status) : kInnerKilled);
    }
    ::prctl(PR_SET_PDEATHSIG, SIGKILL);
  }
  if (gPlan.setUid &&
      (::setgroups(0, nullptr) != 0 || ::setresgid(gPlan.uid, gPlan.uid, gPlan.uid) != 0 ||
       ::setresuid(gPlan.uid, gPlan.uid, gPlan.uid) != 0)) {
    ::_exit(kSetuid);
  }
  if (gPlan.newUserAndNetns && ::unshare(CLONE_NEWUSER | CLONE_NEWNET) != 0) {
    ::_exit(kUnshareUserNet);
  }
  if (gPlan.leaderExit == LeaderExit::kNever) {
    connectAll();
    handOver();
    waitForRelease();
  }
  if (gPlan.leaderExit == LeaderExit::kAfterConnect) connectAll();
  constexpr int kThread =
      CLONE_VM | CLONE_FS | CLONE_FILES | CLONE_SIGHAND | CLONE_THREAD | CLONE_SYSVSEM;
  if (::clone(outlivingThread, gThreadStack + sizeof gThreadStack, kThread, nullptr) < 0) {
    ::_exit(kClone);
  }
  ::syscall(SYS_exit, 0);  // this thread alone: the leader becomes a zombie, the process lives
  __builtin_unreachable();
}

std::string childStep(int status) {
  if (!WIFEXITED(status)) return "killed";
  switch (WEXITSTATUS(status)) {
    case kSetnsNet:
      return "setns(net)";
    case kJoinCgroup:
      return "write 0 to cgroup.procs";
    case kSocket:
      return "socket";
    case kConnect:
      return "connect";
    case kSendmsg:
      return "sendmsg";
    case kSetnsPid:
      return "setns(pid)";
    case kUnsharePid:
      return "unshare(CLONE_NEWPID)";
    case kFork:
      return "fork into the pid namespace";
    case kInnerKilled:
      return "the caller in the pid namespace was killed";
    case kSetuid:
      return "setresuid";
    case kUnshareUserNet:
      return "unshare(CLONE_NEWUSER | CLONE_NEWNET)";
    case kClone:
      return "clone of the outliving thread";
    case kLeaderNeverExited:
      return "the main thread never showed as a zombie";
    default:
      return "exit " + std::to_string(WEXITSTATUS(status));
  }
}

}  // namespace

Result<PodCaller> PodCaller::connect(const std::string& netnsPath, const std::string& socketPath,
                                     int connections) {
  return start(socketPath, {.netnsPath = netnsPath, .connections = connections});
}

Result<PodCaller> PodCaller::start(const std::string& socketPath, const CallerSpec& spec) {
  if (spec.connections < 1 || spec.connections > kMaxConnections) {
    return fail(ErrorCode::kInvalidArgument, "connections must be 1-200");
  }
  if (spec.newPidns && !spec.pidnsPath.empty()) {
    return fail(ErrorCode::kInvalidArgument, "a new pid namespace or an existing one, not both");
  }
  HOSTPORT_TRY(const sockaddr_un address, unixAddress(socketPath));
  const auto openNamespace = [](const std::string& path) -> Result<UniqueFd> {
    if (path.empty()) return UniqueFd();
    UniqueFd fd(::open(path.c_str(), O_RDONLY | O_CLOEXEC));
    if (!fd.valid()) return failSystem(ErrorCode::kIo, "open " + path, errno);
    return fd;
  };
  HOSTPORT_TRY(const UniqueFd netns, openNamespace(spec.netnsPath));
  UniqueFd cgroupProcs;
  if (!spec.cgroupProcs.empty()) {
    cgroupProcs.reset(::open(spec.cgroupProcs.c_str(), O_WRONLY | O_CLOEXEC));
    if (!cgroupProcs.valid()) return failSystem(ErrorCode::kIo, "open " + spec.cgroupProcs, errno);
  }
  HOSTPORT_TRY(const UniqueFd pidns, openNamespace(spec.pidnsPath));
  int channel[2];
  if (::socketpair(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0, channel) != 0) {
    return failSystem(ErrorCode::kIo, "socketpair", errno);
  }
  UniqueFd ours(channel[0]), theirs(channel[1]);
  int pipeFds[2];
  if (::pipe2(pipeFds, O_CLOEXEC) != 0) return failSystem(ErrorCode::kIo, "pipe2", errno);
  UniqueFd releaseRead(pipeFds[0]), releaseWrite(pipeFds[1]);
  // The child reads its plan from its own copy of this memory, written before the fork.
  std::unique_lock planLock(gPlanMutex);
  gPlan = ChildPlan{.cgroupProcsFd = cgroupProcs.get(),
                    .netnsFd = netns.get(),
                    .pidnsFd = pidns.get(),
                    .newPidns = spec.newPidns,
                    .setUid = spec.uid.has_value(),
                    .uid = spec.uid.value_or(0),
                    .newUserAndNetns = spec.newUserAndNetns,
                    .leaderExit = spec.leaderExit,
                    .address = address,
                    .connections = spec.connections,
                    .channel = theirs.get(),
                    .release = releaseRead.get(),
                    .releaseWriter = releaseWrite.get()};
  const pid_t pid = ::fork();
  if (pid < 0) return failSystem(ErrorCode::kIo, "fork", errno);
  if (pid == 0) runChild();
  planLock.unlock();
  theirs.reset();
  releaseRead.reset();

  alignas(cmsghdr) char control[CMSG_SPACE(sizeof(int) * kMaxConnections)] = {};
  char byte = 0;
  iovec vector{&byte, 1};
  msghdr message{};
  message.msg_iov = &vector;
  message.msg_iovlen = 1;
  message.msg_control = control;
  message.msg_controllen = sizeof control;
  pollfd ready{ours.get(), POLLIN, 0};
  // The child sends at once or exits; the bound only keeps a broken child from hanging the test.
  if (::poll(&ready, 1, 30'000) != 1 || ::recvmsg(ours.get(), &message, MSG_CMSG_CLOEXEC) != 1) {
    ::kill(pid, SIGKILL);
    int status = 0;
    ::waitpid(pid, &status, 0);
    return fail(ErrorCode::kIo, "the pod caller failed at " + childStep(status) + " (netns " +
                                    (spec.netnsPath.empty() ? "own" : spec.netnsPath) + ")");
  }
  std::vector<UniqueFd> sockets;
  for (cmsghdr* header = CMSG_FIRSTHDR(&message); header != nullptr;
       header = CMSG_NXTHDR(&message, header)) {
    if (header->cmsg_level != SOL_SOCKET || header->cmsg_type != SCM_RIGHTS) continue;
    const std::size_t count = (header->cmsg_len - CMSG_LEN(0)) / sizeof(int);
    for (std::size_t i = 0; i < count; ++i) {
      int fd;
      std::memcpy(&fd, CMSG_DATA(header) + i * sizeof(int), sizeof fd);
      sockets.emplace_back(fd);
    }
  }
  if (sockets.size() != static_cast<std::size_t>(spec.connections)) {
    return fail(ErrorCode::kIo, "the pod caller sent " + std::to_string(sockets.size()) +
                                    " sockets, not " + std::to_string(spec.connections));
  }
  return PodCaller(pid, std::move(releaseWrite), std::move(sockets));
}

PodCaller::PodCaller(PodCaller&& other) noexcept
    : pid_(std::exchange(other.pid_, 0)),
      release_(std::move(other.release_)),
      sockets_(std::move(other.sockets_)) {}

PodCaller::~PodCaller() {
  if (pid_ <= 0) return;
  ::kill(pid_, SIGKILL);
  ::waitpid(pid_, nullptr, 0);
}

Result<void> PodCaller::exit() {
  release_.reset();
  int status = 0;
  if (::waitpid(pid_, &status, 0) != pid_) return failSystem(ErrorCode::kIo, "waitpid", errno);
  pid_ = 0;
  if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
    return fail(ErrorCode::kIo, "the pod caller ended badly: " + childStep(status));
  }
  return {};
}

Result<UniqueFd> connectUnix(const std::string& socketPath) {
  HOSTPORT_TRY(const sockaddr_un address, unixAddress(socketPath));
  UniqueFd fd(::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0));
  if (!fd.valid()) return failSystem(ErrorCode::kIo, "socket", errno);
  if (::connect(fd.get(), reinterpret_cast<const sockaddr*>(&address), sizeof address) != 0) {
    return failSystem(ErrorCode::kUnavailable, "connect " + socketPath, errno);
  }
  return fd;
}

Result<HttpAnswer> httpRequest(int socket, std::string_view method, std::string_view target,
                               std::chrono::milliseconds deadline) {
  const std::string request =
      std::string(method) + " " + std::string(target) + " HTTP/1.1\r\nHost: pod\r\n\r\n";
  if (::send(socket, request.data(), request.size(), MSG_NOSIGNAL) !=
      static_cast<ssize_t>(request.size())) {
    return failSystem(ErrorCode::kUnavailable, "send", errno);
  }
  const auto until = std::chrono::steady_clock::now() + deadline;
  std::string received;
  std::size_t headerEnd = std::string::npos;
  std::size_t bodyLength = 0;
  while (headerEnd == std::string::npos || received.size() < headerEnd + 4 + bodyLength) {
    const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
        until - std::chrono::steady_clock::now());
    pollfd readable{socket, POLLIN, 0};
    if (left.count() <= 0 || ::poll(&readable, 1, static_cast<int>(left.count())) != 1) {
      return fail(ErrorCode::kIo, "no answer to " + std::string(target) + " before the deadline");
    }
    char buffer[4096];
    const ssize_t n = ::recv(socket, buffer, sizeof buffer, 0);
    if (n <= 0) {
      return fail(ErrorCode::kUnavailable,
                  "connection closed before the answer to " + std::string(target));
    }
    received.append(buffer, static_cast<std::size_t>(n));
    if (headerEnd == std::string::npos &&
        (headerEnd = received.find("\r\n\r\n")) != received.npos) {
      const auto at = received.find("Content-Length: ");
      if (at == std::string::npos || at > headerEnd) {
        return fail(ErrorCode::kIo, "answer without Content-Length: " + received);
      }
      bodyLength = std::stoul(received.substr(at + 16));
    }
  }
  HttpAnswer answer;
  answer.status = static_cast<unsigned>(std::stoul(received.substr(received.find(' ') + 1)));
  answer.body = received.substr(headerEnd + 4, bodyLength);
  return answer;
}

}  // namespace hostport::test
