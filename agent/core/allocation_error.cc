#include "agent/core/allocation_error.h"

#include <utility>

#include "common/identifiers.h"
#include "common/quote.h"

namespace hostport::agent::core {
namespace {

std::string describe(const Lease& lease) {
  std::string out = "attachment " + quotedKey(lease.key);
  if (!lease.pod.empty())
    out += " (pod " + quoteText(lease.pod.namespaceName + "/" + lease.pod.name) + ")";
  return out;
}

// ` by pid 1234 ("nginx")`, as much of it as the kernel told. A comm is chosen by its process.
std::string describe(const PortHolder& holder) {
  const std::string command = holder.command.empty() ? "" : quoteText(holder.command, 16);
  if (holder.pid == 0) return command.empty() ? "" : " by " + command;
  return " by pid " + std::to_string(holder.pid) + (command.empty() ? "" : " (" + command + ")");
}

}  // namespace

std::string quotedKey(const AttachmentKey& key) {
  return quoteText(key.str(), kMaxContainerIdLength + 1 + kMaxIfnameLength);
}

Error heldError(Protocol protocol, uint16_t port, const Lease& holder) {
  return Error{ErrorCode::kConflict,
               "port " + describePort(protocol, port) + " is held by " + describe(holder),
               {}};
}

AllocationError heldConflict(Protocol protocol, uint16_t port, Lease holder) {
  Error error = heldError(protocol, port, holder);
  return {std::move(error), Conflict{protocol, port, std::move(holder), {}}};
}

AllocationError boundOnHost(Protocol protocol, uint16_t port, PortHolder holder) {
  Error error{ErrorCode::kConflict,
              "port " + describePort(protocol, port) + " is in use on the host" + describe(holder),
              {}};
  return {std::move(error), Conflict{protocol, port, std::nullopt, std::move(holder)}};
}

}  // namespace hostport::agent::core
