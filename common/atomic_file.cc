#include "common/atomic_file.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <functional>

#include "common/unique_fd.h"

namespace hostport {
namespace {

Result<void> writeAll(int fd, std::string_view bytes, const std::filesystem::path& path) {
  while (!bytes.empty()) {
    const ssize_t written = ::write(fd, bytes.data(), bytes.size());
    if (written < 0) {
      if (errno == EINTR) continue;
      return failSystem(ErrorCode::kIo, "write " + path.string(), errno);
    }
    bytes.remove_prefix(static_cast<std::size_t>(written));
  }
  return {};
}

Result<void> syncDirectory(const std::filesystem::path& dir) {
  UniqueFd fd(::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
  if (!fd.valid()) return failSystem(ErrorCode::kIo, "open " + dir.string(), errno);
  if (::fsync(fd.get()) != 0) return failSystem(ErrorCode::kIo, "fsync " + dir.string(), errno);
  return {};
}

Result<void> ensureDirectory(const std::filesystem::path& dir) {
  std::error_code error;
  std::filesystem::create_directories(dir, error);
  if (error) return failSystem(ErrorCode::kIo, "create directory " + dir.string(), error.value());
  return {};
}

/// Fills dir/.name.tmp-<pid> through `fill`, then renames it over dir/name: the one way every
/// file here is replaced.
Result<void> replaceThroughTemp(
    const std::filesystem::path& dir, std::string_view name, Durability durability, mode_t mode,
    const std::function<Result<void>(int, const std::filesystem::path&)>& fill,
    const std::function<Result<void>()>& beforeRename = {}) {
  HOSTPORT_TRY_VOID(ensureDirectory(dir));
  const auto tmp = dir / ("." + std::string(name) + ".tmp-" + std::to_string(::getpid()));
  const auto path = dir / name;
  UniqueFd fd(::open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC | O_NOFOLLOW, mode));
  if (!fd.valid()) return failSystem(ErrorCode::kIo, "create " + tmp.string(), errno);
  auto written = fill(fd.get(), tmp);
  // The umask may have taken bits `mode` asks for (an executable's x bits, say).
  if (written && ::fchmod(fd.get(), mode) != 0) {
    written = failSystem(ErrorCode::kIo, "chmod " + tmp.string(), errno);
  }
  if (written && durability == Durability::kDurable && ::fsync(fd.get()) != 0) {
    written = failSystem(ErrorCode::kIo, "fsync " + tmp.string(), errno);
  }
  if (written && beforeRename) written = beforeRename();
  if (written && ::rename(tmp.c_str(), path.c_str()) != 0) {
    written = failSystem(ErrorCode::kIo, "rename " + tmp.string() + " to " + path.string(), errno);
  }
  if (!written) {
    ::unlink(tmp.c_str());
    return written;
  }
  if (durability == Durability::kDurable) return syncDirectory(dir);
  return {};
}

}  // namespace

Result<void> writeFileAtomically(const std::filesystem::path& dir, std::string_view name,
                                 std::string_view bytes, Durability durability, mode_t mode,
                                 const std::function<Result<void>()>& beforeRename) {
  return replaceThroughTemp(
      dir, name, durability, mode,
      [bytes](int fd, const std::filesystem::path& tmp) { return writeAll(fd, bytes, tmp); },
      beforeRename);
}

Result<void> copyFileAtomically(const std::filesystem::path& source,
                                const std::filesystem::path& dir, std::string_view name,
                                Durability durability, mode_t mode) {
  UniqueFd in(::open(source.c_str(), O_RDONLY | O_CLOEXEC));
  if (!in.valid()) return failSystem(ErrorCode::kIo, "open " + source.string(), errno);
  return replaceThroughTemp(
      dir, name, durability, mode, [&](int fd, const std::filesystem::path& tmp) -> Result<void> {
        char buffer[64 * 1024];
        for (;;) {
          const ssize_t got = ::read(in.get(), buffer, sizeof buffer);
          if (got < 0) {
            if (errno == EINTR) continue;
            return failSystem(ErrorCode::kIo, "read " + source.string(), errno);
          }
          if (got == 0) return {};
          HOSTPORT_TRY_VOID(
              writeAll(fd, std::string_view(buffer, static_cast<std::size_t>(got)), tmp));
        }
      });
}

Result<std::optional<std::string>> readSmallFile(const std::filesystem::path& path,
                                                 std::size_t maxBytes) {
  UniqueFd fd(::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NOFOLLOW));
  if (!fd.valid()) {
    if (errno == ENOENT) return std::nullopt;
    return failSystem(ErrorCode::kIo, "open " + path.string(), errno);
  }
  std::string text;
  char buffer[4096];
  for (;;) {
    const ssize_t got = ::read(fd.get(), buffer, sizeof buffer);
    if (got < 0) {
      if (errno == EINTR) continue;
      return failSystem(ErrorCode::kIo, "read " + path.string(), errno);
    }
    if (got == 0) break;
    text.append(buffer, static_cast<std::size_t>(got));
    if (text.size() > maxBytes) {
      return fail(ErrorCode::kDecode,
                  path.string() + " is larger than " + std::to_string(maxBytes) + " bytes");
    }
  }
  return text;
}

Result<void> removeFile(const std::filesystem::path& path) {
  if (::unlink(path.c_str()) != 0 && errno != ENOENT) {
    return failSystem(ErrorCode::kIo, "remove " + path.string(), errno);
  }
  return {};
}

}  // namespace hostport
