#include "common/dir_watch.h"

#include <poll.h>
#include <sys/eventfd.h>
#include <sys/inotify.h>

#include <algorithm>
#include <cerrno>
#include <cstdint>

namespace hostport {
namespace {

/// Everything that changes what the runtime would load. IN_MODIFY is included for in-place
/// rewrites (a truncate and a slow write): the debounce then waits for the writer to finish.
constexpr uint32_t kWatchMask = IN_CLOSE_WRITE | IN_MODIFY | IN_CREATE | IN_DELETE | IN_MOVED_FROM |
                                IN_MOVED_TO | IN_ATTRIB | IN_DELETE_SELF | IN_MOVE_SELF;

Result<UniqueFd> openWakeFd() {
  UniqueFd fd(::eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK));
  if (!fd.valid()) return failSystem(ErrorCode::kIo, "eventfd", errno);
  return fd;
}

}  // namespace

Result<DirWatch> DirWatch::create() {
  HOSTPORT_TRY(UniqueFd wakeFd, openWakeFd());
  return DirWatch(UniqueFd(), std::move(wakeFd));
}

Result<void> DirWatch::watch(const std::filesystem::path& dir) {
  inotify_.reset();
  watchLost_ = false;
  UniqueFd inotify(::inotify_init1(IN_CLOEXEC | IN_NONBLOCK));
  if (!inotify.valid()) return failSystem(ErrorCode::kIo, "inotify_init1", errno);
  if (::inotify_add_watch(inotify.get(), dir.c_str(), kWatchMask | IN_ONLYDIR) < 0) {
    return failSystem(ErrorCode::kIo, "watch " + dir.string(), errno);
  }
  inotify_ = std::move(inotify);
  return {};
}

Result<void> DirWatch::drainEvents() {
  alignas(inotify_event) char buffer[16 * 1024];
  for (;;) {
    const ssize_t got = ::read(inotify_.get(), buffer, sizeof buffer);
    if (got < 0) {
      if (errno == EINTR) continue;
      if (errno == EAGAIN) return {};
      return failSystem(ErrorCode::kIo, "read inotify events", errno);
    }
    for (ssize_t offset = 0; offset < got;) {
      const auto* event = reinterpret_cast<const inotify_event*>(buffer + offset);
      if (event->mask & (IN_IGNORED | IN_DELETE_SELF | IN_MOVE_SELF)) watchLost_ = true;
      offset += static_cast<ssize_t>(sizeof(inotify_event) + event->len);
    }
  }
}

Result<DirWatch::Wake> DirWatch::wait(std::chrono::steady_clock::time_point deadline) {
  for (;;) {
    const auto left =
        std::chrono::ceil<std::chrono::milliseconds>(deadline - std::chrono::steady_clock::now());
    const int timeout = static_cast<int>(std::clamp<int64_t>(left.count(), 0, 60'000));
    pollfd fds[2] = {{wake_.get(), POLLIN, 0}, {inotify_.get(), POLLIN, 0}};
    const int ready = ::poll(fds, inotify_.valid() ? 2 : 1, timeout);
    if (ready < 0) {
      if (errno == EINTR) continue;
      return failSystem(ErrorCode::kIo, "poll", errno);
    }
    if (fds[0].revents & POLLIN) return Wake::kStopped;  // left unread: every later wait stops too
    if (inotify_.valid() && (fds[1].revents & POLLIN)) {
      HOSTPORT_TRY_VOID(drainEvents());
      return Wake::kChanged;
    }
    if (ready == 0 && std::chrono::steady_clock::now() >= deadline) return Wake::kTimedOut;
  }
}

void DirWatch::wake() const {
  const uint64_t one = 1;
  [[maybe_unused]] const auto written = ::write(wake_.get(), &one, sizeof one);
}

}  // namespace hostport
