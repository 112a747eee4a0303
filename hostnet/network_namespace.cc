#include "hostnet/network_namespace.h"

#include <fcntl.h>
#include <linux/magic.h>
#include <linux/nsfs.h>
#include <sched.h>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <sys/vfs.h>

#include <cerrno>
#include <system_error>

#include "common/unique_fd.h"

namespace hostport::hostnet {
namespace {

std::string fileKind(mode_t mode) {
  switch (mode & S_IFMT) {
    case S_IFREG:
      return "a regular file";
    case S_IFDIR:
      return "a directory";
    case S_IFIFO:
      return "a FIFO";
    case S_IFCHR:
      return "a character device";
    case S_IFBLK:
      return "a block device";
    case S_IFSOCK:
      return "a socket";
    case S_IFLNK:
      return "a symbolic link";
  }
  return "a file of unknown type";
}

std::string namespaceKind(int type) {
  switch (type) {
    case CLONE_NEWNS:
      return "a mnt namespace";
    case CLONE_NEWUTS:
      return "a uts namespace";
    case CLONE_NEWIPC:
      return "an ipc namespace";
    case CLONE_NEWUSER:
      return "a user namespace";
    case CLONE_NEWPID:
      return "a pid namespace";
    case CLONE_NEWCGROUP:
      return "a cgroup namespace";
    case CLONE_NEWTIME:
      return "a time namespace";
  }
  return "a namespace of type " + std::to_string(type);
}

std::unexpected<Error> notANetworkNamespace(const std::string& what) {
  return fail(ErrorCode::kInvalidArgument, "is " + what + ", not a network namespace");
}

/// open(2) of `path`; a path that leads nowhere is kNotFound ("does not exist").
Result<UniqueFd> openPath(const std::string& path, int flags) {
  UniqueFd fd(::open(path.c_str(), flags | O_CLOEXEC));
  if (fd.valid()) return fd;
  const int error = errno;
  if (error == ENOENT || error == ENOTDIR) {
    return std::unexpected(
        Error{ErrorCode::kNotFound, "does not exist", {}, {error, std::generic_category()}});
  }
  return failSystem(ErrorCode::kIo, "cannot be opened", error);
}

Result<struct stat> statOf(int fd) {
  struct stat info {};
  if (::fstat(fd, &info) != 0) return failSystem(ErrorCode::kIo, "cannot be looked at", errno);
  return info;
}

}  // namespace

Result<NamespaceId> networkNamespaceAt(const std::string& path) {
  HOSTPORT_TRY(const UniqueFd located, openPath(path, O_PATH));
  HOSTPORT_TRY(const struct stat found, statOf(located.get()));
  struct statfs filesystem {};
  if (::fstatfs(located.get(), &filesystem) != 0) {
    return failSystem(ErrorCode::kIo, "cannot be looked at", errno);
  }
  if (filesystem.f_type != NSFS_MAGIC) return notANetworkNamespace(fileKind(found.st_mode));

  // A namespace file: opening it for reading has no side effect.
  HOSTPORT_TRY(const UniqueFd opened, openPath(path, O_RDONLY | O_NONBLOCK | O_NOCTTY));
  HOSTPORT_TRY(const struct stat reached, statOf(opened.get()));
  if (namespaceIdOf(reached) != namespaceIdOf(found)) {
    return fail(ErrorCode::kIo, "was replaced while it was being checked");
  }
  const int type = ::ioctl(opened.get(), NS_GET_NSTYPE);
  if (type < 0) return failSystem(ErrorCode::kIo, "is a namespace of unknown type", errno);
  if (type != CLONE_NEWNET) return notANetworkNamespace(namespaceKind(type));
  return namespaceIdOf(found);
}

}  // namespace hostport::hostnet
