#include "agent/core/pool_state.h"

#include <chrono>

namespace hostport::agent::core {
namespace {

ProtocolSet protocolsOf(PortProtocol protocol) {
  ProtocolSet set;
  for (const auto kernel : kernelProtocols(protocol)) set.add(kernel);
  return set;
}

ProtocolSet protocolsOf(const std::vector<PortProtocol>& allowed) {
  if (allowed.empty()) return ProtocolSet::all();
  ProtocolSet set;
  for (const auto protocol : allowed) set |= protocolsOf(protocol);
  return set;
}

}  // namespace

PoolState::PoolState(const PoolSpec& spec, PortBitmap& quarantined,
                     std::function<uint64_t()> random)
    : name(spec.name),
      protocols(protocolsOf(spec.protocols)),
      picker(makePicker(spec.strategy, PoolLayout(spec.ranges), std::move(random))),
      quarantine(picker->layout(), std::chrono::seconds(spec.reuseDelaySeconds), quarantined),
      rules(spec.rules),
      counts(spec.rules.maxPortsPerPod.has_value()) {}

bool PoolState::allows(PortProtocol protocol) const {
  return protocols.includes(protocolsOf(protocol));
}

std::string PoolState::allowedNames() const {
  std::string out;
  for (const Protocol protocol : kAllProtocols) {
    if (!protocols.contains(protocol)) continue;
    if (!out.empty()) out += ", ";
    out += protocolName(protocol);
  }
  return out;
}

void PoolState::taken(uint16_t port) {
  ++used;
  picker->taken(port);
  quarantine.remove(port);  // granted anyway: the last free port, sticky, or static
}

void PoolState::freed(uint16_t port, std::optional<Quarantine::TimePoint> releasedAt) {
  --used;
  picker->released(port);
  if (releasedAt) quarantine.add(port, *releasedAt);
}

}  // namespace hostport::agent::core
