#include "agent/service/netns_id.h"

#include <sys/stat.h>

#include <cerrno>
#include <string>

namespace hostport::agent::service {
namespace {

NetnsId identityOf(const struct stat& info) {
  return {static_cast<uint64_t>(info.st_dev), static_cast<uint64_t>(info.st_ino)};
}

}  // namespace

NetnsId netnsIdOf(std::string_view path) {
  if (path.empty()) return {};
  struct stat info {};
  if (::stat(std::string(path).c_str(), &info) != 0) return {};
  return identityOf(info);
}

SandboxRef sandboxOf(const Lease& lease) { return {lease.key, lease.netns, lease.netnsId}; }

NetnsLiveness netnsLiveness(const SandboxRef& sandbox) {
  if (!sandbox.netnsId.known() || sandbox.netns.empty()) return NetnsLiveness::kUnknown;
  struct stat info {};
  if (::stat(sandbox.netns.c_str(), &info) != 0) {
    return errno == ENOENT || errno == ENOTDIR ? NetnsLiveness::kGone : NetnsLiveness::kUnknown;
  }
  return identityOf(info) == sandbox.netnsId ? NetnsLiveness::kAlive : NetnsLiveness::kGone;
}

}  // namespace hostport::agent::service
