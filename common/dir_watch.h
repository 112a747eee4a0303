#pragma once
// Notices changes in one directory (inotify), and can be woken from another thread (an eventfd),
// so the chainer's thread sleeps in one poll(2) and stops at once.

#include <chrono>
#include <filesystem>

#include "common/error.h"
#include "common/unique_fd.h"

namespace hostport {

class DirWatch {
 public:
  enum class Wake { kChanged, kTimedOut, kStopped };

  /// Not watching yet: wait() sleeps until woken or the deadline.
  static Result<DirWatch> create();
  /// (Re)starts watching `dir` for files written, renamed, created and removed, and for the dir
  /// itself going. On failure (the dir does not exist yet, inotify is out of watches) nothing is
  /// watched, and wait() still wakes at its deadline.
  Result<void> watch(const std::filesystem::path& dir);

  /// Sleeps until a change, wake(), or `deadline`. Reading drains every queued event, so a burst
  /// of writes is one kChanged.
  Result<Wake> wait(std::chrono::steady_clock::time_point deadline);
  /// Makes the current or next wait() return kStopped; callable from any thread.
  void wake() const;
  /// True when the kernel dropped the watch (the dir was removed or moved): watch() again.
  bool watchLost() const { return watchLost_; }
  bool watching() const { return inotify_.valid(); }

 private:
  DirWatch(UniqueFd inotify, UniqueFd wakeFd)
      : inotify_(std::move(inotify)), wake_(std::move(wakeFd)) {}
  Result<void> drainEvents();

  UniqueFd inotify_;
  UniqueFd wake_;
  bool watchLost_ = false;
};

}  // namespace hostport
