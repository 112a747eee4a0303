#pragma once
// A FileOps for tests: forwards to the real syscalls, and on request injects errno failures,
// short writes, slow syncs, a crash (every call fails from some step on, with the crossing write
// torn in half) and a power loss (files cut back to what was last fsynced). Renames and unlinks
// that were not followed by a directory fsync are not rolled back: that part of a power loss is
// covered by hand-built directory states instead.

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <condition_variable>
#include <map>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "agent/store/file_ops.h"

namespace hostport::agent::store {

class FaultyFileOps final : public FileOps {
 public:
  enum class Op {
    kOpen,
    kPwrite,
    kPread,
    kFileSize,
    kFtruncate,
    kFdatasync,
    kFsync,
    kRename,
    kUnlink,
    kMkdir,
    kListDir,
    kSyncDir,
    kLock,
    kCount
  };

  explicit FaultyFileOps(std::shared_ptr<FileOps> real = realFileOps()) : real_(std::move(real)) {}

  /// The call of `op` after `skip` more successful ones fails once with `errnum`.
  void failOnce(Op op, int errnum, int skip = 0) {
    std::lock_guard guard(mu_);
    rules_[index(op)] = Rule{errnum, skip, false};
  }
  /// Every call of `op` fails with `errnum` (0 clears).
  void failAlways(Op op, int errnum) {
    std::lock_guard guard(mu_);
    rules_[index(op)] = Rule{errnum, 0, errnum != 0};
  }
  /// pwrite writes at most `bytes` per call, like a kernel returning short writes.
  void setMaxWrite(size_t bytes) {
    std::lock_guard guard(mu_);
    maxWrite_ = bytes;
  }
  /// fdatasync and fsync take at least this long, so concurrent submitters pile up.
  void setSyncDelay(std::chrono::microseconds delay) {
    std::lock_guard guard(mu_);
    syncDelay_ = delay;
  }
  /// From now on fdatasync and fsync wait, before they sync, until releaseSyncs(): a test holds
  /// the store's committer in a batch's sync to look at what is true meanwhile.
  void holdSyncs() {
    std::lock_guard guard(mu_);
    syncsHeld_ = true;
  }
  void releaseSyncs() {
    {
      std::lock_guard guard(mu_);
      syncsHeld_ = false;
    }
    syncGate_.notify_all();
  }
  /// Waits until a sync is held (true), or `deadline` passes (false).
  bool waitForHeldSync(std::chrono::steady_clock::time_point deadline) {
    std::unique_lock guard(mu_);
    return syncGate_.wait_until(guard, deadline, [this] { return syncsWaiting_ > 0; });
  }
  /// Allows `steps` more mutating calls; from then on every call fails with EIO, as if the
  /// machine had stopped. The pwrite that hits the limit writes half its bytes first.
  void crashAfter(int steps) {
    std::lock_guard guard(mu_);
    crashBudget_ = steps;
  }
  bool crashed() const {
    std::lock_guard guard(mu_);
    return crashBudget_ == 0;
  }
  /// Power loss: cuts every file written through this object back to its last synced size.
  void loseUnsyncedData() {
    std::lock_guard guard(mu_);
    for (const auto& [path, synced] : synced_) {
      struct stat st {};
      if (::stat(path.c_str(), &st) == 0 && static_cast<uint64_t>(st.st_size) > synced) {
        (void)::truncate(path.c_str(), static_cast<off_t>(synced));
      }
    }
  }
  int calls(Op op) const {
    std::lock_guard guard(mu_);
    return counts_[index(op)];
  }
  /// Mutating calls made so far, such as "rename snapshot.tmp".
  std::vector<std::string> steps() const {
    std::lock_guard guard(mu_);
    return steps_;
  }

  Result<UniqueFd> open(const std::filesystem::path& path, int flags, mode_t mode) override {
    const bool mutating = (flags & (O_CREAT | O_TRUNC)) != 0;
    if (auto injected = before(Op::kOpen, mutating, "open " + path.filename().string())) {
      return std::unexpected(sysError("open", path, injected));
    }
    auto fd = real_->open(path, flags, mode);
    if (fd) {
      std::lock_guard guard(mu_);
      paths_[fd->get()] = path;
      if ((flags & O_TRUNC) != 0 || !synced_.contains(path)) {
        synced_[path] = (flags & O_TRUNC) != 0 ? 0 : sizeOf(path);
      }
    }
    return fd;
  }

  Result<size_t> pwrite(int fd, std::string_view data, uint64_t offset) override {
    size_t limit = data.size();
    {
      std::lock_guard guard(mu_);
      if (maxWrite_ > 0) limit = std::min(limit, maxWrite_);
      if (crashBudget_ == 1 && !data.empty()) {
        // The crash lands in the middle of this append: half of it reaches the file.
        (void)real_->pwrite(fd, data.substr(0, std::max<size_t>(1, limit / 2)), offset);
      }
    }
    if (auto injected = before(Op::kPwrite, true, "pwrite " + name(fd))) {
      return std::unexpected(sysError("pwrite", {}, injected));
    }
    return real_->pwrite(fd, data.substr(0, limit), offset);
  }

  Result<size_t> pread(int fd, char* buffer, size_t size, uint64_t offset) override {
    if (auto injected = before(Op::kPread, false, "")) {
      return std::unexpected(sysError("pread", {}, injected));
    }
    return real_->pread(fd, buffer, size, offset);
  }

  Result<uint64_t> fileSize(int fd) override {
    if (auto injected = before(Op::kFileSize, false, "")) {
      return std::unexpected(sysError("fstat", {}, injected));
    }
    return real_->fileSize(fd);
  }

  Result<void> ftruncate(int fd, uint64_t length) override {
    if (auto injected = before(Op::kFtruncate, true, "ftruncate " + name(fd))) {
      return std::unexpected(sysError("ftruncate", {}, injected));
    }
    auto ok = real_->ftruncate(fd, length);
    std::lock_guard guard(mu_);
    if (ok && paths_.contains(fd)) {
      auto& synced = synced_[paths_[fd]];
      synced = std::min(synced, length);
    }
    return ok;
  }

  Result<void> fdatasync(int fd) override { return sync(Op::kFdatasync, fd, "fdatasync"); }
  Result<void> fsync(int fd) override { return sync(Op::kFsync, fd, "fsync"); }

  Result<void> rename(const std::filesystem::path& from, const std::filesystem::path& to) override {
    if (auto injected = before(Op::kRename, true, "rename " + from.filename().string())) {
      return std::unexpected(sysError("rename", from, injected));
    }
    auto ok = real_->rename(from, to);
    std::lock_guard guard(mu_);
    if (ok) {
      if (auto node = synced_.extract(from)) synced_.insert_or_assign(to, node.mapped());
    }
    return ok;
  }

  Result<void> unlink(const std::filesystem::path& path) override {
    if (auto injected = before(Op::kUnlink, true, "unlink " + path.filename().string())) {
      return std::unexpected(sysError("unlink", path, injected));
    }
    auto ok = real_->unlink(path);
    std::lock_guard guard(mu_);
    if (ok) synced_.erase(path);
    return ok;
  }

  Result<void> mkdir(const std::filesystem::path& path, mode_t mode) override {
    if (auto injected = before(Op::kMkdir, true, "mkdir " + path.filename().string())) {
      return std::unexpected(sysError("mkdir", path, injected));
    }
    return real_->mkdir(path, mode);
  }

  Result<std::vector<std::string>> listDir(const std::filesystem::path& dir) override {
    if (auto injected = before(Op::kListDir, false, "")) {
      return std::unexpected(sysError("opendir", dir, injected));
    }
    return real_->listDir(dir);
  }

  Result<void> syncDir(const std::filesystem::path& dir) override {
    if (auto injected = before(Op::kSyncDir, true, "syncDir")) {
      return std::unexpected(sysError("fsync", dir, injected));
    }
    return real_->syncDir(dir);
  }

  Result<void> lockExclusive(int fd) override {
    if (auto injected = before(Op::kLock, false, "")) {
      return std::unexpected(sysError("flock", {}, injected));
    }
    return real_->lockExclusive(fd);
  }

 private:
  struct Rule {
    int errnum = 0;
    int skip = 0;
    bool always = false;
  };

  static size_t index(Op op) { return static_cast<size_t>(op); }

  static uint64_t sizeOf(const std::filesystem::path& path) {
    struct stat st {};
    return ::stat(path.c_str(), &st) == 0 ? static_cast<uint64_t>(st.st_size) : 0;
  }

  std::string name(int fd) {
    std::lock_guard guard(mu_);
    auto it = paths_.find(fd);
    return it == paths_.end() ? std::string("?") : it->second.filename().string();
  }

  /// Counts the call, and returns the errno to inject (0: go ahead).
  int before(Op op, bool mutating, const std::string& step) {
    std::lock_guard guard(mu_);
    ++counts_[index(op)];
    if (crashBudget_ == 0) return EIO;
    if (mutating) {
      if (crashBudget_ > 0 && --crashBudget_ == 0) return EIO;
      steps_.push_back(step);
    }
    Rule& rule = rules_[index(op)];
    if (rule.errnum == 0) return 0;
    if (rule.always) return rule.errnum;
    if (rule.skip > 0) {
      --rule.skip;
      return 0;
    }
    return std::exchange(rule.errnum, 0);
  }

  Result<void> sync(Op op, int fd, std::string_view what) {
    std::chrono::microseconds delay{0};
    {
      std::unique_lock guard(mu_);
      delay = syncDelay_;
      ++syncsWaiting_;
      syncGate_.notify_all();
      syncGate_.wait(guard, [this] { return !syncsHeld_; });
      --syncsWaiting_;
    }
    if (delay.count() > 0) std::this_thread::sleep_for(delay);
    if (auto injected = before(op, true, std::string(what) + " " + name(fd))) {
      return std::unexpected(sysError(what, {}, injected));
    }
    auto ok = op == Op::kFsync ? real_->fsync(fd) : real_->fdatasync(fd);
    std::lock_guard guard(mu_);
    if (ok && paths_.contains(fd)) synced_[paths_[fd]] = sizeOf(paths_[fd]);
    return ok;
  }

  std::shared_ptr<FileOps> real_;
  mutable std::mutex mu_;
  Rule rules_[static_cast<size_t>(Op::kCount)];
  int counts_[static_cast<size_t>(Op::kCount)] = {};
  size_t maxWrite_ = 0;
  std::chrono::microseconds syncDelay_{0};
  bool syncsHeld_ = false;
  int syncsWaiting_ = 0;
  std::condition_variable syncGate_;
  int crashBudget_ = -1;  // -1: no crash planned
  std::map<int, std::filesystem::path> paths_;
  std::map<std::filesystem::path, uint64_t> synced_;
  std::vector<std::string> steps_;
};

}  // namespace hostport::agent::store
