#pragma once
// The syscall seam of the store (Envoy style): every open, write, sync, rename and unlink the
// store makes goes through FileOps, so tests can inject EIO, ENOSPC, short writes and "the
// machine stopped here" without root or a special file system.
//
// Error policy: the real implementation maps errno to ENOENT -> kNotFound,
// EWOULDBLOCK (flock) -> kUnavailable, everything else -> kIo. The message names the operation,
// the path when the call takes one, and strerror (systemError(), so the errno is the cause);
// callers add the file name for fd calls.

#include <sys/types.h>

#include <cstdint>
#include <filesystem>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "common/error.h"
#include "common/unique_fd.h"

namespace hostport::agent::store {

class FileOps {
 public:
  virtual ~FileOps() = default;

  /// open(2); O_CLOEXEC is always added.
  virtual Result<UniqueFd> open(const std::filesystem::path& path, int flags, mode_t mode) = 0;
  /// One pwrite(2). It may write fewer bytes than asked, like the kernel; see writeAll().
  virtual Result<size_t> pwrite(int fd, std::string_view data, uint64_t offset) = 0;
  /// One pread(2); 0 at end of file.
  virtual Result<size_t> pread(int fd, char* buffer, size_t size, uint64_t offset) = 0;
  virtual Result<uint64_t> fileSize(int fd) = 0;
  virtual Result<void> ftruncate(int fd, uint64_t length) = 0;
  virtual Result<void> fdatasync(int fd) = 0;
  virtual Result<void> fsync(int fd) = 0;
  virtual Result<void> rename(const std::filesystem::path& from,
                              const std::filesystem::path& to) = 0;
  virtual Result<void> unlink(const std::filesystem::path& path) = 0;
  /// mkdir(2); success when the directory already exists.
  virtual Result<void> mkdir(const std::filesystem::path& path, mode_t mode) = 0;
  /// Names of the entries of `dir`, without "." and "..".
  virtual Result<std::vector<std::string>> listDir(const std::filesystem::path& dir) = 0;
  /// Opens `dir` and fsyncs it, so creates, renames and unlinks in it survive a power loss.
  virtual Result<void> syncDir(const std::filesystem::path& dir) = 0;
  /// flock(LOCK_EX | LOCK_NB); kUnavailable when another open file description holds it.
  virtual Result<void> lockExclusive(int fd) = 0;
};

/// The real syscalls. Stateless and thread-safe.
std::shared_ptr<FileOps> realFileOps();

/// The Error a failed syscall becomes; fakes use it too so messages look the same.
Error sysError(std::string_view operation, const std::filesystem::path& path, int errnum);

/// Loops over short writes until all of `data` is at `offset`; the first error ends it, and the
/// bytes past `offset` are then unknown.
Result<void> writeAll(FileOps& fs, int fd, std::string_view data, uint64_t offset);
/// Reads the whole file through the seam.
Result<std::string> readAll(FileOps& fs, int fd);

}  // namespace hostport::agent::store
