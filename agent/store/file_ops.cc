#include "agent/store/file_ops.h"

#include <dirent.h>
#include <fcntl.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>

namespace hostport::agent::store {
namespace {

Result<void> check(int rc, std::string_view operation, const std::filesystem::path& path) {
  if (rc == 0) return {};
  return std::unexpected(sysError(operation, path, errno));
}

/// Retries a syscall interrupted by a signal; the store never wants EINTR to become an error.
template <typename Call>
auto retryEintr(Call call) {
  for (;;) {
    auto rc = call();
    if (rc >= 0 || errno != EINTR) return rc;
  }
}

class RealFileOps final : public FileOps {
 public:
  Result<UniqueFd> open(const std::filesystem::path& path, int flags, mode_t mode) override {
    const int fd = retryEintr([&] { return ::open(path.c_str(), flags | O_CLOEXEC, mode); });
    if (fd < 0) return std::unexpected(sysError("open", path, errno));
    return UniqueFd(fd);
  }

  Result<size_t> pwrite(int fd, std::string_view data, uint64_t offset) override {
    const ssize_t n = retryEintr(
        [&] { return ::pwrite(fd, data.data(), data.size(), static_cast<off_t>(offset)); });
    if (n < 0) return std::unexpected(sysError("pwrite", {}, errno));
    return static_cast<size_t>(n);
  }

  Result<size_t> pread(int fd, char* buffer, size_t size, uint64_t offset) override {
    const ssize_t n =
        retryEintr([&] { return ::pread(fd, buffer, size, static_cast<off_t>(offset)); });
    if (n < 0) return std::unexpected(sysError("pread", {}, errno));
    return static_cast<size_t>(n);
  }

  Result<uint64_t> fileSize(int fd) override {
    struct stat st {};
    if (::fstat(fd, &st) != 0) return std::unexpected(sysError("fstat", {}, errno));
    return static_cast<uint64_t>(st.st_size);
  }

  Result<void> ftruncate(int fd, uint64_t length) override {
    return check(retryEintr([&] { return ::ftruncate(fd, static_cast<off_t>(length)); }),
                 "ftruncate", {});
  }

  Result<void> fdatasync(int fd) override {
    return check(retryEintr([&] { return ::fdatasync(fd); }), "fdatasync", {});
  }

  Result<void> fsync(int fd) override {
    return check(retryEintr([&] { return ::fsync(fd); }), "fsync", {});
  }

  Result<void> rename(const std::filesystem::path& from, const std::filesystem::path& to) override {
    return check(::rename(from.c_str(), to.c_str()), "rename",
                 from.string() + " -> " + to.string());
  }

  Result<void> unlink(const std::filesystem::path& path) override {
    return check(::unlink(path.c_str()), "unlink", path);
  }

  Result<void> mkdir(const std::filesystem::path& path, mode_t mode) override {
    if (::mkdir(path.c_str(), mode) == 0) return {};
    const int err = errno;
    struct stat st {};
    if (err == EEXIST && ::stat(path.c_str(), &st) == 0 && S_ISDIR(st.st_mode)) return {};
    return std::unexpected(sysError("mkdir", path, err));
  }

  Result<std::vector<std::string>> listDir(const std::filesystem::path& dir) override {
    // A unique_ptr with a functor deleter keeps the DIR* closed on every return path.
    struct CloseDir {
      void operator()(DIR* d) const { ::closedir(d); }
    };
    std::unique_ptr<DIR, CloseDir> handle(::opendir(dir.c_str()));
    if (!handle) return std::unexpected(sysError("opendir", dir, errno));
    std::vector<std::string> names;
    for (;;) {
      errno = 0;
      const dirent* entry = ::readdir(handle.get());
      if (entry == nullptr) {
        if (errno != 0) return std::unexpected(sysError("readdir", dir, errno));
        break;
      }
      const std::string_view name = entry->d_name;
      if (name != "." && name != "..") names.emplace_back(name);
    }
    return names;
  }

  Result<void> syncDir(const std::filesystem::path& dir) override {
    HOSTPORT_TRY(const UniqueFd fd, open(dir, O_RDONLY | O_DIRECTORY, 0));
    return check(retryEintr([&] { return ::fsync(fd.get()); }), "fsync", dir);
  }

  Result<void> lockExclusive(int fd) override {
    return check(retryEintr([&] { return ::flock(fd, LOCK_EX | LOCK_NB); }), "flock", {});
  }
};

}  // namespace

std::shared_ptr<FileOps> realFileOps() {
  static const std::shared_ptr<FileOps> instance = std::make_shared<RealFileOps>();
  return instance;
}

Error sysError(std::string_view operation, const std::filesystem::path& path, int errnum) {
  ErrorCode code = ErrorCode::kIo;
  if (errnum == ENOENT) code = ErrorCode::kNotFound;
  if (errnum == EWOULDBLOCK || errnum == EAGAIN) code = ErrorCode::kUnavailable;
  std::string what(operation);
  if (!path.empty()) what += " " + path.string();
  return systemError(code, what, errnum);
}

Result<void> writeAll(FileOps& fs, int fd, std::string_view data, uint64_t offset) {
  while (!data.empty()) {
    HOSTPORT_TRY(const size_t written, fs.pwrite(fd, data, offset));
    if (written == 0) {
      // The kernel only returns 0 for a non-empty write when it cannot make progress; treat it as
      // the disk-full case it almost always is rather than spinning.
      return std::unexpected(sysError("pwrite", {}, ENOSPC));
    }
    data.remove_prefix(written);
    offset += written;
  }
  return {};
}

Result<std::string> readAll(FileOps& fs, int fd) {
  HOSTPORT_TRY(const uint64_t size, fs.fileSize(fd));
  std::string bytes;
  bytes.resize(size);
  uint64_t done = 0;
  while (done < bytes.size()) {
    HOSTPORT_TRY(const size_t n, fs.pread(fd, bytes.data() + done, bytes.size() - done, done));
    if (n == 0) break;  // the file shrank under us; use what is there
    done += n;
  }
  bytes.resize(done);
  return bytes;
}

}  // namespace hostport::agent::store
