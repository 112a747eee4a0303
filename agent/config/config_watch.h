#pragma once
// Notices that the agent's config file changed, for a reload without SIGHUP. The file's directory
// is watched (inotify, common/dir_watch.h), not the file: a ConfigMap volume updates by
// writing a new timestamped dir and swapping the `..data` symlink, so the file's own inode never
// changes and a watch on it would see nothing. Any change in the dir, once quiet for the debounce,
// re-reads the file; the callback runs only when its text differs from the last one seen, so
// unrelated files in the dir cost a read, not a reload. The watch runs on a thread of its own.

#include <chrono>
#include <filesystem>
#include <functional>
#include <memory>
#include <string>
#include <thread>

#include "common/dir_watch.h"
#include "common/error.h"

namespace hostport::agent::config {

class ConfigWatch {
 public:
  static constexpr std::chrono::milliseconds kDefaultDebounce{500};

  /// Starts watching the directory of `file`; `changed` runs on the watch's thread each time the
  /// file's text changes. Errors: inotify unavailable, or the directory cannot be watched.
  static Result<std::unique_ptr<ConfigWatch>> start(
      std::filesystem::path file, std::function<void()> changed,
      std::chrono::milliseconds debounce = kDefaultDebounce);
  ConfigWatch(const ConfigWatch&) = delete;
  ConfigWatch& operator=(const ConfigWatch&) = delete;
  /// Stops the thread and waits for it (a callback in progress finishes first).
  ~ConfigWatch();

 private:
  ConfigWatch(std::filesystem::path file, std::function<void()> changed,
              std::chrono::milliseconds debounce, DirWatch watch);
  void run();

  const std::filesystem::path file_;
  const std::function<void()> changed_;
  const std::chrono::milliseconds debounce_;
  DirWatch watch_;
  std::string lastText_;  // the thread's: the file as last seen
  std::thread thread_;
};

}  // namespace hostport::agent::config
