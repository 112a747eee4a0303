#include "tests/support/pod_caller.h"

#include <fcntl.h>
#include <poll.h>
#include <sched.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

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

/// The child: syscalls only. Exit codes name the failed step for the parent's message.
[[noreturn]] void runChild(int netnsFd, const sockaddr_un& address, int connections, int channel,
                           int release, int releaseWriter) {
  ::prctl(PR_SET_PDEATHSIG, SIGKILL);
  ::close(releaseWriter);  // or the child's own copy keeps its read from ever seeing EOF
  if (netnsFd >= 0 && ::setns(netnsFd, CLONE_NEWNET) != 0) ::_exit(10);
  int fds[kMaxConnections];
  for (int i = 0; i < connections; ++i) {
    fds[i] = ::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (fds[i] < 0) ::_exit(11);
    if (::connect(fds[i], reinterpret_cast<const sockaddr*>(&address), sizeof address) != 0) {
      ::_exit(12);
    }
  }
  alignas(cmsghdr) char control[CMSG_SPACE(sizeof(int) * kMaxConnections)] = {};
  char byte = 'x';
  iovec vector{&byte, 1};
  msghdr message{};
  message.msg_iov = &vector;
  message.msg_iovlen = 1;
  message.msg_control = control;
  message.msg_controllen = CMSG_SPACE(sizeof(int) * connections);
  cmsghdr* header = CMSG_FIRSTHDR(&message);
  header->cmsg_level = SOL_SOCKET;
  header->cmsg_type = SCM_RIGHTS;
  header->cmsg_len = CMSG_LEN(sizeof(int) * connections);
  std::memcpy(CMSG_DATA(header), fds, sizeof(int) * connections);
  if (::sendmsg(channel, &message, 0) != 1) ::_exit(13);
  char ignored;
  while (::read(release, &ignored, 1) < 0 && errno == EINTR) {
  }
  ::_exit(0);
}

std::string childStep(int status) {
  if (!WIFEXITED(status)) return "killed";
  switch (WEXITSTATUS(status)) {
    case 10:
      return "setns";
    case 11:
      return "socket";
    case 12:
      return "connect";
    case 13:
      return "sendmsg";
    default:
      return "exit " + std::to_string(WEXITSTATUS(status));
  }
}

}  // namespace

Result<PodCaller> PodCaller::connect(const std::string& netnsPath, const std::string& socketPath,
                                     int connections) {
  if (connections < 1 || connections > kMaxConnections) {
    return fail(ErrorCode::kInvalidArgument, "connections must be 1-200");
  }
  HOSTPORT_TRY(const sockaddr_un address, unixAddress(socketPath));
  UniqueFd netns;
  if (!netnsPath.empty()) {
    netns.reset(::open(netnsPath.c_str(), O_RDONLY | O_CLOEXEC));
    if (!netns.valid()) return failSystem(ErrorCode::kIo, "open " + netnsPath, errno);
  }
  int channel[2];
  if (::socketpair(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0, channel) != 0) {
    return failSystem(ErrorCode::kIo, "socketpair", errno);
  }
  UniqueFd ours(channel[0]), theirs(channel[1]);
  int pipeFds[2];
  if (::pipe2(pipeFds, O_CLOEXEC) != 0) return failSystem(ErrorCode::kIo, "pipe2", errno);
  UniqueFd releaseRead(pipeFds[0]), releaseWrite(pipeFds[1]);
  const pid_t pid = ::fork();
  if (pid < 0) return failSystem(ErrorCode::kIo, "fork", errno);
  if (pid == 0) {
    runChild(netns.get(), address, connections, theirs.get(), releaseRead.get(),
             releaseWrite.get());
  }
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
                                    (netnsPath.empty() ? "own" : netnsPath) + ")");
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
  if (sockets.size() != static_cast<std::size_t>(connections)) {
    return fail(ErrorCode::kIo, "the pod caller sent " + std::to_string(sockets.size()) +
                                    " sockets, not " + std::to_string(connections));
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
