#include "common/namespace_id.h"

#include <sys/stat.h>

#include <cerrno>

namespace hostport {

Result<NamespaceId> namespaceIdOf(int fd) {
  struct stat info {};
  if (::fstat(fd, &info) != 0) return failSystem(ErrorCode::kIo, "fstat of a namespace", errno);
  return namespaceIdOf(info);
}

NamespaceId namespaceIdOf(const struct stat& info) {
  return {static_cast<uint64_t>(info.st_dev), static_cast<uint64_t>(info.st_ino)};
}

}  // namespace hostport
