#include "agent/server/peer_process.h"

#include <fcntl.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cerrno>
#include <string>

namespace hostport::agent::server {
namespace {

#ifndef SO_PEERPIDFD
constexpr int SO_PEERPIDFD = 77;  // Linux 6.5; glibc 2.36's headers predate it
#endif

std::string processName(pid_t pid) { return "process " + std::to_string(pid); }

/// The caller's pidfd; an invalid fd when the kernel has no SO_PEERPIDFD (ENOPROTOOPT). Any other
/// failure is an error: kernels 6.5 to 6.15 answer EINVAL once the peer has been reaped, which is
/// the very case the pidfd is there to catch (a pid reused by another process).
Result<UniqueFd> peerPidfd(int socketFd, pid_t pid) {
  int pidfd = -1;
  socklen_t length = sizeof pidfd;
  if (::getsockopt(socketFd, SOL_SOCKET, SO_PEERPIDFD, &pidfd, &length) == 0) {
    return UniqueFd(pidfd);
  }
  if (errno == ENOPROTOOPT) return UniqueFd();
  return failSystem(ErrorCode::kUnavailable,
                    processName(pid) + " exited before it could be identified (SO_PEERPIDFD)",
                    errno);
}

/// True unless the process behind `pidfd` has exited (a zombie counts as alive here: it keeps its
/// pid until reaped, and checkUnchanged() refuses it by its state).
bool pidfdAlive(int pidfd) {
  return ::syscall(SYS_pidfd_send_signal, pidfd, 0, nullptr, 0) == 0 || errno != ESRCH;
}

}  // namespace

Result<PeerProcess> PeerProcess::ofSocket(int socketFd) {
  ucred credentials{};
  socklen_t length = sizeof credentials;
  if (::getsockopt(socketFd, SOL_SOCKET, SO_PEERCRED, &credentials, &length) != 0) {
    return failSystem(ErrorCode::kIo, "SO_PEERCRED", errno);
  }
  if (credentials.pid <= 0) {
    return fail(ErrorCode::kUnavailable,
                "the kernel names no process for this connection (a pid namespace the agent "
                "does not see; the agent needs hostPID)");
  }
  HOSTPORT_TRY(const UniqueFd pidfd, peerPidfd(socketFd, credentials.pid));
  HOSTPORT_TRY(PeerProcess process, open(credentials.pid));
  if (pidfd.valid() && !pidfdAlive(pidfd.get())) {
    return fail(ErrorCode::kUnavailable, processName(credentials.pid) +
                                             " exited before it could be identified; its pid "
                                             "may now be another process's");
  }
  return process;
}

Result<PeerProcess> PeerProcess::open(pid_t pid) {
  const std::string path = "/proc/" + std::to_string(pid);
  UniqueFd dir(::open(path.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
  if (!dir.valid()) {
    const int error = errno;
    return failSystem(error == ENOENT || error == ESRCH ? ErrorCode::kUnavailable : ErrorCode::kIo,
                      "cannot open " + path, error);
  }
  PeerProcess process(pid, std::move(dir), 0);
  HOSTPORT_TRY(const ProcStat stat, process.readStat());
  if (stat.exited()) {
    return fail(ErrorCode::kUnavailable, processName(pid) + " has exited");
  }
  process.startTime_ = stat.startTime;
  return process;
}

Result<ProcStat> PeerProcess::readStat() const {
  UniqueFd file(::openat(dir_.get(), "stat", O_RDONLY | O_CLOEXEC));
  if (!file.valid()) {
    // ESRCH or ENOENT: the held process is gone, whatever now has its number.
    const int error = errno;
    if (error == ESRCH || error == ENOENT) {
      return fail(ErrorCode::kUnavailable, processName(pid_) + " has exited");
    }
    return failSystem(ErrorCode::kIo, "cannot open /proc/" + std::to_string(pid_) + "/stat", error);
  }
  char buffer[1024];  // about 300 bytes: 52 numbers and a command name of at most 16
  const ssize_t read = ::read(file.get(), buffer, sizeof buffer);
  if (read <= 0) {
    const int error = read == 0 ? ESRCH : errno;
    if (error == ESRCH) return fail(ErrorCode::kUnavailable, processName(pid_) + " has exited");
    return failSystem(ErrorCode::kIo, "cannot read /proc/" + std::to_string(pid_) + "/stat", error);
  }
  auto stat = parseProcStat(std::string_view(buffer, static_cast<std::size_t>(read)));
  if (!stat) return withContext(stat.error(), processName(pid_));
  return stat;
}

Result<NetnsId> PeerProcess::netns() const {
  struct stat info {};
  if (::fstatat(dir_.get(), "ns/net", &info, 0) != 0) {
    const int error = errno;
    if (error == ENOENT || error == ESRCH) {
      return fail(ErrorCode::kUnavailable, processName(pid_) + " has exited");
    }
    return failSystem(ErrorCode::kIo, "cannot read the network namespace of " + processName(pid_),
                      error);
  }
  return NetnsId{static_cast<uint64_t>(info.st_dev), static_cast<uint64_t>(info.st_ino)};
}

Result<void> PeerProcess::checkUnchanged() const {
  HOSTPORT_TRY(const ProcStat stat, readStat());
  if (stat.exited()) return fail(ErrorCode::kUnavailable, processName(pid_) + " has exited");
  if (stat.startTime != startTime_) {
    return fail(ErrorCode::kUnavailable, processName(pid_) + " is not the process that connected");
  }
  return {};
}

}  // namespace hostport::agent::server

namespace hostport::agent::server {

ConnectionPeer ConnectionPeer::identify(int socketFd) {
  auto process = PeerProcess::ofSocket(socketFd);
  Result<NetnsId> netns =
      process ? process->netns() : Result<NetnsId>(std::unexpected(process.error()));
  return {std::move(process), std::move(netns)};
}

}  // namespace hostport::agent::server
