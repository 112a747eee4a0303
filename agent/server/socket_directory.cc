#include "agent/server/socket_directory.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <string>

namespace hostport::agent::server {
namespace {

constexpr mode_t kParentMode = 0755;

std::string octal(mode_t mode) {
  char text[8];
  std::snprintf(text, sizeof text, "%04o", static_cast<unsigned>(mode & 07777));
  return text;
}

/// mkdir(`path`, `mode`) with `mode` exactly, whatever the umask; nothing when it exists.
Result<void> makeDirectory(const std::filesystem::path& path, mode_t mode) {
  if (::mkdir(path.c_str(), mode) != 0) {
    if (errno == EEXIST) return {};
    return failSystem(ErrorCode::kIo, "cannot create " + path.string(), errno);
  }
  UniqueFd made(::open(path.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC));
  if (!made.valid() || ::fchmod(made.get(), mode) != 0) {
    return failSystem(ErrorCode::kIo, "cannot set the mode of " + path.string(), errno);
  }
  return {};
}

}  // namespace

Result<UniqueFd> prepareSocketDirectory(const std::filesystem::path& dir, mode_t mode) {
  const std::filesystem::path absolute = dir.empty() ? "." : dir.lexically_normal();
  // Each missing parent, from the top, then the directory itself.
  std::filesystem::path prefix;
  for (const auto& part : absolute.parent_path()) {
    prefix /= part;
    if (prefix == prefix.root_path()) continue;
    HOSTPORT_TRY_VOID(makeDirectory(prefix, kParentMode));
  }
  HOSTPORT_TRY_VOID(makeDirectory(absolute, mode));
  UniqueFd fd(::open(absolute.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
  if (!fd.valid()) return failSystem(ErrorCode::kIo, "cannot open " + absolute.string(), errno);
  struct stat info {};
  if (::fstat(fd.get(), &info) != 0) {
    return failSystem(ErrorCode::kIo, "cannot stat " + absolute.string(), errno);
  }
  const std::string described = absolute.string() + " is mode " + octal(info.st_mode) +
                                " (owner uid " + std::to_string(info.st_uid) + ")";
  if (info.st_uid != 0 && info.st_uid != ::geteuid()) {
    return fail(ErrorCode::kNotAllowed,
                described +
                    ": it belongs to another user, who could replace the socket; the "
                    "agent binds its sockets only in directories of root or its own");
  }
  if ((info.st_mode & (S_IWGRP | S_IWOTH)) != 0) {
    return fail(ErrorCode::kNotAllowed,
                described + ": others may write it, and so replace the socket; make it " +
                    octal(mode) + " (chmod go-w) or let the agent create it");
  }
  return fd;
}

}  // namespace hostport::agent::server
