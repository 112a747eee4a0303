#include "agent/server/namespace_origin.h"

#include <fcntl.h>
#include <linux/nsfs.h>
#include <sys/ioctl.h>

#include <cerrno>
#include <string>

namespace hostport::agent::server {
namespace {

Result<NamespaceId> idOfFile(const char* path) {
  UniqueFd fd(::open(path, O_RDONLY | O_CLOEXEC));
  if (!fd.valid()) return failSystem(ErrorCode::kIo, std::string("cannot open ") + path, errno);
  return namespaceIdOf(fd.get());
}

}  // namespace

Result<NetnsOwner> netnsOwner(int netnsFd, const NamespaceId& agentUserns) {
  // EPERM: the owner is not the agent's user namespace or below it.
  UniqueFd owner(::ioctl(netnsFd, NS_GET_USERNS));
  if (!owner.valid()) {
    if (errno == EPERM) return NetnsOwner{};
    return failSystem(ErrorCode::kIo, "NS_GET_USERNS", errno);
  }
  HOSTPORT_TRY(NamespaceId id, namespaceIdOf(owner.get()));
  if (id == agentUserns) {
    NetnsOwner agents;
    agents.place = NetnsOwner::Place::kAgents;
    return agents;
  }
  UniqueFd current = std::move(owner);
  for (int depth = 1; depth <= kMaxNamespaceDepth; ++depth) {
    UniqueFd parent(::ioctl(current.get(), NS_GET_PARENT));
    if (!parent.valid()) {
      if (errno == EPERM) return NetnsOwner{};  // the chain left the agent's before meeting it
      return failSystem(ErrorCode::kIo, "NS_GET_PARENT of a user namespace", errno);
    }
    HOSTPORT_TRY(const NamespaceId parentId, namespaceIdOf(parent.get()));
    if (parentId == agentUserns) {
      uid_t creator = 0;
      if (::ioctl(current.get(), NS_GET_OWNER_UID, &creator) != 0) {
        return failSystem(ErrorCode::kIo, "NS_GET_OWNER_UID", errno);
      }
      NetnsOwner below;
      below.place = NetnsOwner::Place::kBelow;
      below.depth = depth;
      below.outermost = id;
      below.outermostCreator = creator;
      return below;
    }
    current = std::move(parent);
    id = parentId;
  }
  return fail(ErrorCode::kIo, "a user namespace nested deeper than " +
                                  std::to_string(kMaxNamespaceDepth) + " levels");
}

Result<std::optional<NamespaceId>> outermostPidnsBelow(int pidnsFd, const NamespaceId& agentPidns) {
  HOSTPORT_TRY(NamespaceId id, namespaceIdOf(pidnsFd));
  if (id == agentPidns) return std::optional<NamespaceId>();
  UniqueFd held;
  int current = pidnsFd;
  for (int depth = 1; depth <= kMaxNamespaceDepth; ++depth) {
    UniqueFd parent(::ioctl(current, NS_GET_PARENT));
    if (!parent.valid()) {
      // EPERM: the parent is outside the agent's pid namespace.
      return failSystem(errno == EPERM ? ErrorCode::kUnavailable : ErrorCode::kIo,
                        "the caller's pid namespace is not below the agent's (NS_GET_PARENT)",
                        errno);
    }
    HOSTPORT_TRY(const NamespaceId parentId, namespaceIdOf(parent.get()));
    if (parentId == agentPidns) return std::optional<NamespaceId>(id);
    held = std::move(parent);
    current = held.get();
    id = parentId;
  }
  return fail(ErrorCode::kIo, "a pid namespace nested deeper than " +
                                  std::to_string(kMaxNamespaceDepth) + " levels");
}

Result<AgentNamespaces> AgentNamespaces::ofThisProcess() {
  HOSTPORT_TRY(const NamespaceId user, idOfFile("/proc/self/ns/user"));
  HOSTPORT_TRY(const NamespaceId pid, idOfFile("/proc/self/ns/pid"));
  return AgentNamespaces{user, pid};
}

}  // namespace hostport::agent::server
