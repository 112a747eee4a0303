#pragma once
// A pool as the engine keeps it while it runs, built from its PoolSpec (pool_spec.h): the
// strategy's picker, the quarantine of its released ports, its rules with what they count, and
// how many of its ports are held. The engine tells it when one of its ports becomes held or free
// (port_table.h), so the picker's order, the quarantine and the count move together.

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>

#include "agent/core/pool_rules.h"
#include "agent/core/pool_spec.h"
#include "agent/core/port_picker.h"
#include "agent/core/quarantine.h"
#include "agent/core/rule_counts.h"
#include "common/protocol.h"
#include "lease/lease.h"

namespace hostport::agent::core {

struct PoolState {
  /// `spec` passed validatePoolSpecs(). `quarantined` is the engine's bitmap of quarantined
  /// ports (quarantine.h) and must outlive this; `random` feeds the random strategy.
  PoolState(const PoolSpec& spec, PortBitmap& quarantined, std::function<uint64_t()> random);

  /// True when the pool allows every kernel protocol that `protocol` occupies.
  bool allows(PortProtocol protocol) const;
  /// The kernel protocols allowed, "tcp, udp", for a message.
  std::string allowedNames() const;

  /// `port`, of this pool, became held by some lease.
  void taken(uint16_t port);
  /// `port`, of this pool, is held by no lease any more. `releasedAt` set: a dynamic port, which
  /// waits out the reuse delay from then; static claims never do.
  void freed(uint16_t port, std::optional<Quarantine::TimePoint> releasedAt);

  std::string name;
  ProtocolSet protocols = ProtocolSet::all();  // kernel protocols allowed
  uint32_t used = 0;                           // ports of the pool held by some lease
  std::unique_ptr<PortPicker> picker;          // its layout is the pool's ranges
  Quarantine quarantine;
  PoolRules rules;    // a reload may change them (Allocator::setRules)
  RuleCounts counts;  // what the rules are judged on
};

}  // namespace hostport::agent::core
