#include "agent/server/caller_identity.h"

namespace hostport::agent::server {

std::string CallerKey::str() const {
  switch (kind) {
    case Kind::kNetns:
      return "netns net:[" + std::to_string(second) + "]";
    case Kind::kPidns:
      return "pid namespace pid:[" + std::to_string(second) + "]";
    case Kind::kUid:
      return "uid " + std::to_string(first);
    case Kind::kUnidentified:
      break;
  }
  return "unidentified";
}

CallerKey callerKey(const NetnsId& netns, const CallerNamespaces& caller) {
  if (caller.netnsOwner.place == NetnsOwner::Place::kAgents) {
    return {CallerKey::Kind::kNetns, netns.device, netns.inode};
  }
  if (caller.outermostPidns) {
    return {CallerKey::Kind::kPidns, caller.outermostPidns->device, caller.outermostPidns->inode};
  }
  return {CallerKey::Kind::kUid, caller.uid, 0};
}

std::optional<std::string> whyNeverASandbox(const NetnsOwner& owner) {
  switch (owner.place) {
    case NetnsOwner::Place::kAgents:
      return std::nullopt;
    case NetnsOwner::Place::kBelow:
      if (owner.depth == 1 && owner.outermostCreator == 0) return std::nullopt;
      if (owner.depth > 1) {
        return "it belongs to a user namespace nested " + std::to_string(owner.depth) +
               " levels below the node's, where no container runtime makes a pod's";
      }
      return "it belongs to a user namespace that uid " + std::to_string(owner.outermostCreator) +
             " made, not the container runtime (root)";
    case NetnsOwner::Place::kElsewhere:
      break;
  }
  return std::string("it belongs to a user namespace outside the agent's");
}

}  // namespace hostport::agent::server
