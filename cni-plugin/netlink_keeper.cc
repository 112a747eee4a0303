#include "cni-plugin/netlink_keeper.h"

#include <dirent.h>
#include <fcntl.h>
#include <linux/netlink.h>
#include <poll.h>
#include <sys/file.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <optional>
#include <string>

namespace hostport::cni {
namespace {

using Clock = std::chrono::steady_clock;

/// Sockets per message: a plugin holds one or two (ours, and libnftables' for rules).
constexpr std::size_t kMaxFdsPerMessage = 16;

bool isNetfilterSocket(int fd) {
  int domain = 0, protocol = 0;
  socklen_t length = sizeof(domain);
  if (getsockopt(fd, SOL_SOCKET, SO_DOMAIN, &domain, &length) != 0 || domain != AF_NETLINK) {
    return false;
  }
  length = sizeof(protocol);
  return getsockopt(fd, SOL_SOCKET, SO_PROTOCOL, &protocol, &length) == 0 &&
         protocol == NETLINK_NETFILTER;
}

std::optional<sockaddr_un> addressOf(const std::filesystem::path& path) {
  sockaddr_un address{};
  address.sun_family = AF_UNIX;
  const std::string text = path.string();
  if (text.size() >= sizeof(address.sun_path)) return std::nullopt;
  std::memcpy(address.sun_path, text.c_str(), text.size() + 1);
  return address;
}

/// Room for `wanted` descriptors: the soft limit raised toward the hard one; what fits.
std::size_t roomForDescriptors(std::size_t wanted) {
  rlimit limit{};
  if (getrlimit(RLIMIT_NOFILE, &limit) != 0) return 0;
  if (limit.rlim_cur < limit.rlim_max) {
    limit.rlim_cur = limit.rlim_max;
    (void)setrlimit(RLIMIT_NOFILE, &limit);
    (void)getrlimit(RLIMIT_NOFILE, &limit);
  }
  constexpr rlim_t kReserve = 64;  // the keeper's own, and a message's worth in flight
  return limit.rlim_cur <= kReserve ? 0 : std::min<std::size_t>(wanted, limit.rlim_cur - kReserve);
}

/// What a handover carries: one byte, and room for kMaxFdsPerMessage descriptors beside it. Its
/// header points into itself, so it stays where it was made.
struct Handover {
  char byte = 'k';
  iovec data{&byte, 1};
  alignas(cmsghdr) char control[CMSG_SPACE(sizeof(int) * kMaxFdsPerMessage)] = {};
  msghdr message{};

  Handover() {
    message.msg_iov = &data;
    message.msg_iovlen = 1;
    message.msg_control = control;
    message.msg_controllen = sizeof control;
  }
  Handover(const Handover&) = delete;
  Handover& operator=(const Handover&) = delete;
};

/// Takes the descriptors one connection carries (one message) into `held`.
void receiveFrom(int connection, std::vector<UniqueFd>& held) {
  Handover handover;
  msghdr& message = handover.message;
  if (recvmsg(connection, &message, MSG_CMSG_CLOEXEC) <= 0) return;
  for (cmsghdr* header = CMSG_FIRSTHDR(&message); header != nullptr;
       header = CMSG_NXTHDR(&message, header)) {
    if (header->cmsg_level != SOL_SOCKET || header->cmsg_type != SCM_RIGHTS) continue;
    const std::size_t count = (header->cmsg_len - CMSG_LEN(0)) / sizeof(int);
    for (std::size_t i = 0; i < count; ++i) {
      int fd = -1;
      std::memcpy(&fd, CMSG_DATA(header) + i * sizeof(int), sizeof(int));
      held.emplace_back(fd);
    }
  }
}

}  // namespace

std::filesystem::path keeperSocketPath(const std::filesystem::path& stateDir) {
  return stateDir / "netlink-keeper.sock";
}

std::filesystem::path keeperLockPath(const std::filesystem::path& stateDir) {
  return stateDir / "netlink-keeper.lock";
}

std::vector<int> netfilterSockets() {
  std::vector<int> sockets;
  DIR* dir = opendir("/proc/self/fd");
  if (dir == nullptr) return sockets;
  const int own = dirfd(dir);
  while (const dirent* entry = readdir(dir)) {
    char* end = nullptr;
    const long fd = std::strtol(entry->d_name, &end, 10);
    if (end == entry->d_name || *end != '\0' || fd == own) continue;
    if (isNetfilterSocket(static_cast<int>(fd))) sockets.push_back(static_cast<int>(fd));
  }
  closedir(dir);
  return sockets;
}

bool handToKeeper(const std::filesystem::path& stateDir, std::span<const int> sockets) {
  if (sockets.empty() || sockets.size() > kMaxFdsPerMessage) return false;
  const auto address = addressOf(keeperSocketPath(stateDir));
  if (!address) return false;
  const UniqueFd connection(socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0));
  if (connection.get() < 0 ||
      connect(connection.get(), reinterpret_cast<const sockaddr*>(&*address), sizeof *address) !=
          0) {
    return false;
  }
  // Only root may hold our sockets: they carry our right to change the node's nftables.
  ucred peer{};
  socklen_t length = sizeof peer;
  if (getsockopt(connection.get(), SOL_SOCKET, SO_PEERCRED, &peer, &length) != 0 || peer.uid != 0) {
    return false;
  }
  Handover handover;
  msghdr& message = handover.message;
  message.msg_controllen = CMSG_SPACE(sizeof(int) * sockets.size());
  cmsghdr* header = CMSG_FIRSTHDR(&message);
  header->cmsg_level = SOL_SOCKET;
  header->cmsg_type = SCM_RIGHTS;
  header->cmsg_len = CMSG_LEN(sizeof(int) * sockets.size());
  std::memcpy(CMSG_DATA(header), sockets.data(), sizeof(int) * sockets.size());
  return sendmsg(connection.get(), &message, MSG_NOSIGNAL) == 1;
}

bool keepNetlinkSockets(const std::filesystem::path& stateDir, const KeeperTiming& timing) {
  const UniqueFd lock(
      open(keeperLockPath(stateDir).c_str(), O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0600));
  if (lock.get() < 0 || flock(lock.get(), LOCK_EX | LOCK_NB) != 0) return false;
  const std::filesystem::path path = keeperSocketPath(stateDir);
  const auto address = addressOf(path);
  if (!address) return false;
  // The lock is ours, so a socket file there is a dead keeper's.
  (void)unlink(path.c_str());
  const UniqueFd listener(socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0));
  if (listener.get() < 0) return false;
  const mode_t before = umask(0077);  // the file is 0600 from its first moment
  const bool bound =
      bind(listener.get(), reinterpret_cast<const sockaddr*>(&*address), sizeof *address) == 0;
  umask(before);
  if (!bound || listen(listener.get(), SOMAXCONN) != 0) return false;

  const std::size_t room = roomForDescriptors(timing.maxHeld);
  std::vector<UniqueFd> held;
  Clock::time_point lastReceived = Clock::now();
  Clock::time_point firstHeld{};
  for (;;) {
    const auto now = Clock::now();
    const auto waitUntil = held.empty()
                               ? lastReceived + timing.idle
                               : std::min(lastReceived + timing.quiet, firstHeld + timing.maxHold);
    if (now >= waitUntil) {
      if (held.empty()) break;  // idle: nobody hands anything over
      held.clear();             // quiet (or held too long): closed together
      lastReceived = Clock::now();
      continue;
    }
    pollfd waiting{listener.get(), POLLIN, 0};
    const auto timeout =
        std::chrono::duration_cast<std::chrono::milliseconds>(waitUntil - now).count() + 1;
    if (poll(&waiting, 1, static_cast<int>(timeout)) <= 0) continue;
    for (;;) {
      const UniqueFd connection(accept4(listener.get(), nullptr, nullptr, SOCK_CLOEXEC));
      if (connection.get() < 0) break;
      if (held.empty()) firstHeld = Clock::now();
      // A plugin sends as soon as it connects; one that does not must not stop the keeper.
      const timeval patience{0, 100'000};
      (void)setsockopt(connection.get(), SOL_SOCKET, SO_RCVTIMEO, &patience, sizeof patience);
      receiveFrom(connection.get(), held);
      lastReceived = Clock::now();
      if (held.size() >= room) held.clear();  // no room for more: closed now, as before
    }
  }
  // Nobody can connect once the listener is gone; the lock goes last, so a new keeper binds only
  // after this one stopped listening.
  (void)unlink(path.c_str());
  return true;
}

}  // namespace hostport::cni
