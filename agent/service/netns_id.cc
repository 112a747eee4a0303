#include "agent/service/netns_id.h"

#include <sys/stat.h>

#include <cerrno>
#include <string>

#include "common/json_fields.h"
#include "hostnet/network_namespace.h"

namespace hostport::agent::service {
Result<NetnsId> netnsIdOf(std::string_view path) {
  if (path.empty()) return NetnsId{};
  auto found = hostnet::networkNamespaceAt(std::string(path));
  if (found) return *found;
  if (found.error().code != ErrorCode::kInvalidArgument) return NetnsId{};
  return invalidValue("netns", std::string(path), found.error().message);
}

SandboxRef sandboxOf(const Lease& lease) { return {lease.key, lease.netns, lease.netnsId}; }

NetnsLiveness netnsLiveness(const SandboxRef& sandbox) {
  if (!sandbox.netnsId.known() || sandbox.netns.empty()) return NetnsLiveness::kUnknown;
  struct stat info {};
  if (::stat(sandbox.netns.c_str(), &info) != 0) {
    return errno == ENOENT || errno == ENOTDIR ? NetnsLiveness::kGone : NetnsLiveness::kUnknown;
  }
  return namespaceIdOf(info) == sandbox.netnsId ? NetnsLiveness::kAlive : NetnsLiveness::kGone;
}

}  // namespace hostport::agent::service
