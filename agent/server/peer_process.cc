#include "agent/server/peer_process.h"

#include <dirent.h>
#include <fcntl.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cerrno>
#include <charconv>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "agent/server/pod_cgroup.h"

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

struct DirCloser {
  void operator()(DIR* dir) const { ::closedir(dir); }
};

/// What the live `threads` of `process`, whose leader has exited, say through `read(thread)`
/// (nullopt: that thread exited meanwhile). The kernel does not say which of them connected, so
/// they must agree (`same`); kUnavailable when they do not, naming `what` ("cgroups"), or when
/// none is left.
template <typename T, typename Read, typename Same>
Result<T> agreedByThreads(const std::vector<std::string>& threads, const std::string& process,
                          const std::string& what, Read read, Same same) {
  std::optional<T> chosen;
  for (const std::string& thread : threads) {
    HOSTPORT_TRY(std::optional<T> value, read(thread));
    if (!value) continue;
    if (!chosen) {
      chosen = std::move(value);
    } else if (!same(*chosen, *value)) {
      return fail(ErrorCode::kUnavailable,
                  process + " has exited its main thread and its other threads are in different " +
                      what + ": which one connected is unknown");
    }
  }
  if (!chosen) return fail(ErrorCode::kUnavailable, process + " has exited");
  return std::move(*chosen);
}

bool isNumber(std::string_view text) {
  unsigned long value = 0;
  const auto [end, error] = std::from_chars(text.data(), text.data() + text.size(), value);
  return !text.empty() && error == std::errc() && end == text.data() + text.size();
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
  HOSTPORT_TRY(PeerProcess process, open(credentials.pid, credentials.uid));
  if (pidfd.valid() && !pidfdAlive(pidfd.get())) {
    return fail(ErrorCode::kUnavailable, processName(credentials.pid) +
                                             " exited before it could be identified; its pid "
                                             "may now be another process's");
  }
  return process;
}

Result<PeerProcess> PeerProcess::open(pid_t pid, uid_t uid) {
  const std::string path = "/proc/" + std::to_string(pid);
  UniqueFd dir(::open(path.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
  if (!dir.valid()) {
    const int error = errno;
    return failSystem(error == ENOENT || error == ESRCH ? ErrorCode::kUnavailable : ErrorCode::kIo,
                      "cannot open " + path, error);
  }
  PeerProcess process(pid, uid, std::move(dir), 0);
  HOSTPORT_TRY(const ProcStat stat, process.readStat());
  HOSTPORT_TRY_VOID(process.checkGroupAlive(stat));
  process.startTime_ = stat.startTime;
  return process;
}

Result<std::string> PeerProcess::readText(const std::string& path) const {
  UniqueFd file(::openat(dir_.get(), path.c_str(), O_RDONLY | O_CLOEXEC));
  if (!file.valid()) {
    // ESRCH or ENOENT: the held process is gone, whatever now has its number.
    const int error = errno;
    if (error == ESRCH || error == ENOENT) {
      return fail(ErrorCode::kUnavailable, processName(pid_) + " has exited");
    }
    return failSystem(ErrorCode::kIo, "cannot open /proc/" + std::to_string(pid_) + "/" + path,
                      error);
  }
  constexpr std::size_t kMaxText = 64 * 1024;  // /proc/<pid>/cgroup of a dozen v1 hierarchies
  std::string text;
  char buffer[4096];
  while (text.size() < kMaxText) {
    const ssize_t read = ::read(file.get(), buffer, sizeof buffer);
    if (read == 0) break;
    if (read < 0) {
      const int error = errno;
      if (error == EINTR) continue;
      if (error == ESRCH) break;
      return failSystem(ErrorCode::kIo, "cannot read /proc/" + std::to_string(pid_) + "/" + path,
                        error);
    }
    text.append(buffer, static_cast<std::size_t>(read));
  }
  // An empty file is what a process that exited while it was opened leaves.
  if (text.empty()) return fail(ErrorCode::kUnavailable, processName(pid_) + " has exited");
  return text;
}

Result<ProcStat> PeerProcess::readStat(const std::string& path) const {
  HOSTPORT_TRY(const std::string text, readText(path));
  auto stat = parseProcStat(text);
  if (!stat) return withContext(stat.error(), processName(pid_));
  return stat;
}

Result<std::vector<std::string>> PeerProcess::liveThreads() const {
  UniqueFd tasks(::openat(dir_.get(), "task", O_RDONLY | O_DIRECTORY | O_CLOEXEC));
  if (!tasks.valid()) return fail(ErrorCode::kUnavailable, processName(pid_) + " has exited");
  std::unique_ptr<DIR, DirCloser> listing(::fdopendir(tasks.get()));
  if (!listing) {
    return failSystem(ErrorCode::kIo, "cannot list the threads of " + processName(pid_), errno);
  }
  tasks.release();  // the DIR owns it now
  const std::string leader = std::to_string(pid_);
  std::vector<std::string> live;
  std::size_t seen = 0;
  while (const dirent* entry = ::readdir(listing.get())) {
    const std::string_view name = entry->d_name;
    if (!isNumber(name) || name == leader) continue;
    if (++seen > kMaxThreadsRead) {
      return fail(ErrorCode::kUnavailable,
                  processName(pid_) + " has exited its main thread and runs more than " +
                      std::to_string(kMaxThreadsRead) + " others, too many to identify");
    }
    const std::string thread = "task/" + std::string(name);
    const auto stat = readStat(thread + "/stat");
    if (stat && !stat->exited()) live.push_back(thread);  // an error: gone while listed
  }
  return live;
}

Result<void> PeerProcess::checkGroupAlive(const ProcStat& leader) const {
  if (!leader.exited()) return {};
  HOSTPORT_TRY(const auto threads, liveThreads());
  if (threads.empty()) return fail(ErrorCode::kUnavailable, processName(pid_) + " has exited");
  return {};
}

Result<UniqueFd> PeerProcess::openNamespace(std::string_view kind) const {
  const std::string link = "ns/" + std::string(kind);
  UniqueFd fd(::openat(dir_.get(), link.c_str(), O_RDONLY | O_CLOEXEC));
  if (fd.valid()) return fd;
  const int error = errno;
  if (error != ENOENT && error != ESRCH) {
    return failSystem(ErrorCode::kIo,
                      "cannot open the " + std::string(kind) + " namespace of " + processName(pid_),
                      error);
  }
  // The leader's links are gone once it has exited: the live threads speak for the process, and
  // since the kernel does not say which of them connected, they must agree.
  HOSTPORT_TRY(const ProcStat leader, readStat());
  if (!leader.exited()) {
    return failSystem(ErrorCode::kIo,
                      "cannot open the " + std::string(kind) + " namespace of " + processName(pid_),
                      error);
  }
  HOSTPORT_TRY(const auto threads, liveThreads());
  using Opened = std::pair<UniqueFd, NamespaceId>;
  HOSTPORT_TRY(
      Opened opened,
      agreedByThreads<Opened>(
          threads, processName(pid_), std::string(kind) + " namespaces",
          [&](const std::string& thread) -> Result<std::optional<Opened>> {
            UniqueFd fd(::openat(dir_.get(), (thread + "/" + link).c_str(), O_RDONLY | O_CLOEXEC));
            if (!fd.valid()) return std::nullopt;  // that thread exited meanwhile
            HOSTPORT_TRY(const NamespaceId id, namespaceIdOf(fd.get()));
            return Opened{std::move(fd), id};
          },
          [](const Opened& a, const Opened& b) { return a.second == b.second; }));
  return std::move(opened.first);
}

Result<std::string> PeerProcess::readCgroups() const {
  HOSTPORT_TRY(const ProcStat leader, readStat());
  if (!leader.exited()) return readText("cgroup");
  // As openNamespace(): the live threads speak for an exited leader, and must agree.
  HOSTPORT_TRY(const auto threads, liveThreads());
  return agreedByThreads<std::string>(
      threads, processName(pid_), "cgroups",
      [&](const std::string& thread) -> Result<std::optional<std::string>> {
        auto text = readText(thread + "/cgroup");
        if (!text) return std::nullopt;  // that thread exited meanwhile
        return std::move(*text);
      },
      std::equal_to<>());
}

Result<void> PeerProcess::checkUnchanged() const {
  HOSTPORT_TRY(const ProcStat stat, readStat());
  if (stat.startTime != startTime_) {
    return fail(ErrorCode::kUnavailable, processName(pid_) + " is not the process that connected");
  }
  return checkGroupAlive(stat);
}

}  // namespace hostport::agent::server

namespace hostport::agent::server {

namespace {

Result<CallerNamespaces> namespacesOf(const PeerProcess& process, int netnsFd,
                                      const AgentNamespaces& agent) {
  CallerNamespaces caller;
  caller.uid = process.uid();
  HOSTPORT_TRY(caller.netnsOwner, netnsOwner(netnsFd, agent.user));
  HOSTPORT_TRY(const UniqueFd pidns, process.openNamespace("pid"));
  HOSTPORT_TRY(caller.outermostPidns, outermostPidnsBelow(pidns.get(), agent.pid));
  return caller;
}

Result<std::optional<std::string>> podOf(const PeerProcess& process) {
  HOSTPORT_TRY(const std::string cgroups, process.readCgroups());
  return podUidOfCgroups(cgroups);
}

}  // namespace

CallerKey ConnectionPeer::key() const {
  if (!netns || !namespaces) return {};
  return callerKey(*netns, *namespaces);
}

std::string ConnectionPeer::pidText() const {
  return process ? std::to_string(process->pid()) : "unknown";
}

ConnectionPeer ConnectionPeer::identify(int socketFd, const AgentNamespaces& agent) {
  auto process = PeerProcess::ofSocket(socketFd);
  if (!process) {
    const Error error = process.error();
    return {std::move(process), std::unexpected(error), std::unexpected(error),
            std::unexpected(error), std::nullopt};
  }
  Result<std::optional<std::string>> podUid = podOf(*process);
  auto netnsFd = process->openNamespace("net");
  if (!netnsFd) {
    const Error error = netnsFd.error();
    return {std::move(process), std::unexpected(error), std::unexpected(error), std::move(podUid),
            std::nullopt};
  }
  Result<NetnsId> netns = namespaceIdOf(netnsFd->get());
  Result<CallerNamespaces> namespaces = namespacesOf(*process, netnsFd->get(), agent);
  return {std::move(process), std::move(netns), std::move(namespaces), std::move(podUid),
          std::nullopt};
}

}  // namespace hostport::agent::server
