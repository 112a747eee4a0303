#include "agent/core/port_table.h"

#include <algorithm>

namespace hostport::agent::core {
namespace {

uint32_t staticKey(Protocol protocol, uint16_t port) {
  return (static_cast<uint32_t>(protocol) << 16) | port;
}

// 0.0.0.0 and :: mean every address, the same as no hostIp.
std::optional<IpAddress> addressOf(const std::optional<IpAddress>& hostIp) {
  if (hostIp && hostIp->isUnspecified()) return std::nullopt;
  return hostIp;
}

// Every address overlaps everything; two specific addresses overlap only when equal.
bool overlaps(const std::optional<IpAddress>& a, const std::optional<IpAddress>& b) {
  return !a || !b || *a == *b;
}

}  // namespace

PortTable::PortTable() : dynamicHolder_(kPortSpace, 0), staticRefs_(kPortSpace, 0) {}

std::optional<uint32_t> PortTable::holderOf(Protocol protocol, uint16_t port,
                                            const std::optional<IpAddress>& hostIp) const {
  if (dynamicHolder_[port] != 0) return dynamicHolder_[port] - 1;
  if (staticRefs_[port] == 0) return std::nullopt;
  const auto found = statics_.find(staticKey(protocol, port));
  if (found == statics_.end()) return std::nullopt;
  const auto address = addressOf(hostIp);
  for (const auto& hold : found->second) {
    if (overlaps(hold.hostIp, address)) return hold.slot;
  }
  return std::nullopt;
}

std::optional<std::pair<uint32_t, Protocol>> PortTable::anyHolderOf(uint16_t port) const {
  for (const Protocol protocol : kAllProtocols) {
    if (const auto holder = holderOf(protocol, port, std::nullopt)) {
      return std::pair(*holder, protocol);
    }
  }
  return std::nullopt;
}

void PortTable::addStatic(uint32_t slot, const PortGrant& grant) {
  for (const auto protocol : kernelProtocols(grant.protocol)) {
    statics_[staticKey(protocol, grant.hostPort)].push_back({slot, addressOf(grant.hostIp)});
    ++staticRefs_[grant.hostPort];
  }
}

void PortTable::removeStatic(uint32_t slot, const PortGrant& grant) {
  const auto hostIp = addressOf(grant.hostIp);
  for (const auto protocol : kernelProtocols(grant.protocol)) {
    const auto found = statics_.find(staticKey(protocol, grant.hostPort));
    if (found == statics_.end()) continue;
    auto& holds = found->second;
    const auto hold = std::ranges::find_if(
        holds, [&](const StaticHold& h) { return h.slot == slot && h.hostIp == hostIp; });
    if (hold == holds.end()) continue;
    holds.erase(hold);
    if (holds.empty()) statics_.erase(found);
    --staticRefs_[grant.hostPort];
  }
}

}  // namespace hostport::agent::core
