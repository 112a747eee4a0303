#pragma once
// Why an allocation was refused, as the caller gets it, and the words of the engine's conflicts:
// who holds a port, a lease or a process on the host, named the same way in every message.

#include <cstdint>
#include <optional>
#include <string>

#include "agent/core/pool_rules.h"
#include "common/error.h"
#include "common/protocol.h"
#include "lease/lease.h"

namespace hostport::agent::core {

/// Who holds a port on the host, as far as the kernel tells.
struct PortHolder {
  uint32_t pid = 0;     // 0: unknown
  std::string command;  // empty: unknown
};

/// Who holds the static claim an allocation was refused for.
struct Conflict {
  Protocol protocol = Protocol::kTcp;
  uint16_t port = 0;
  std::optional<Lease> lease;  // the lease holding it; nullopt: something on the host
  PortHolder host;             // that host process, as far as the kernel told
};

/// Why an allocation was refused: the Error, and for a refused static claim (kConflict) its
/// holder, so the caller need not look it up again.
struct AllocationError : Error {
  AllocationError(Error error, std::optional<Conflict> conflict = std::nullopt)  // NOLINT
      : Error(std::move(error)), conflict(std::move(conflict)) {}
  AllocationError(RuleRefusal refused)  // NOLINT
      : Error(std::move(refused.error)), refusal(refused.reason) {}
  std::optional<Conflict> conflict;
  std::optional<Refusal> refusal;  // set: the pool's rules refused (kNotAllowed, kQuotaExceeded)
};

/// A key as it goes into a message, quoted: a valid one ("containerId/ifname") is never cut.
std::string quotedKey(const AttachmentKey& key);

/// kConflict: `port tcp/80 is held by attachment "c1/eth0" (pod "ns/web")`.
Error heldError(Protocol protocol, uint16_t port, const Lease& holder);
/// heldError(), with `holder` as the Conflict of the refused static claim.
AllocationError heldConflict(Protocol protocol, uint16_t port, Lease holder);
/// kConflict: `port tcp/80 is in use on the host by pid 1234 ("nginx")`, as much of the holder
/// as the kernel told, with it as the Conflict.
AllocationError boundOnHost(Protocol protocol, uint16_t port, PortHolder holder);

}  // namespace hostport::agent::core
