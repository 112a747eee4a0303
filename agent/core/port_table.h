#pragma once
// Who holds each port number. Occupancy is kept per number in dense arrays (65536 entries each,
// about 0.5 MiB in all) rather than maps of sets: the dynamic holder of each number, the count of
// static claims on it, and one bit "held by anyone" that the pickers scan (FreeView,
// port_picker.h). Static claims, which may share a number across protocols and addresses, keep
// their details in a small hash map keyed by (protocol, port).
//
// A holder is a lease's slot (lease_slots.h). A dynamic grant holds its numbers in every protocol
// on every address; a static claim holds its number in its own kernel protocols on its hostIp,
// where none, 0.0.0.0 and :: all mean every address.
//
// The table knows no pools: apply() and unapply() report each number that became held or free,
// through a callable that the compiler sees (a template, no std::function on this hot path), and
// the allocator updates the pool's count, picker and quarantine.

#include <cstdint>
#include <optional>
#include <unordered_map>
#include <utility>
#include <vector>

#include "agent/core/port_picker.h"
#include "common/ip_address.h"
#include "common/protocol.h"
#include "lease/lease.h"

namespace hostport::agent::core {

class PortTable {
 public:
  PortTable();

  /// The slot of the lease holding `port` for `protocol` on an address overlapping `hostIp`
  /// (none, 0.0.0.0 or :: for every address), if any.
  std::optional<uint32_t> holderOf(Protocol protocol, uint16_t port,
                                   const std::optional<IpAddress>& hostIp) const;
  /// Any holder of the number `port`, in any protocol, with that protocol: what a dynamic grant
  /// needs free.
  std::optional<std::pair<uint32_t, Protocol>> anyHolderOf(uint16_t port) const;
  /// One bit per number that some lease holds.
  const PortBitmap& held() const { return held_; }

  /// Records the grants of `lease`, held at `slot` (the caller has checked them with
  /// holderOf()). Calls `becameHeld(port)` for each number that no lease held before.
  template <typename BecameHeld>
  void apply(uint32_t slot, const Lease& lease, BecameHeld&& becameHeld);
  /// Takes back what apply() recorded for `lease` at `slot`. Calls `becameFree(port, dynamic)`
  /// for each number that no lease holds any more; `dynamic`: a dynamic grant gave it back (only
  /// those go into their pool's quarantine).
  template <typename BecameFree>
  void unapply(uint32_t slot, const Lease& lease, BecameFree&& becameFree);

 private:
  struct StaticHold {
    uint32_t slot;
    std::optional<IpAddress> hostIp;  // normalised: nullopt is every address
  };

  // True when `port` was held by no one before.
  bool hold(uint16_t port) {
    if (held_.test(port)) return false;
    held_.set(port);
    return true;
  }
  // True when `port` was held and no grant holds it any more.
  bool freeIfUnheld(uint16_t port) {
    if (dynamicHolder_[port] != 0 || staticRefs_[port] != 0 || !held_.test(port)) return false;
    held_.reset(port);
    return true;
  }
  void addStatic(uint32_t slot, const PortGrant& grant);
  void removeStatic(uint32_t slot, const PortGrant& grant);

  std::vector<uint32_t> dynamicHolder_;  // slot + 1; 0: none
  std::vector<uint16_t> staticRefs_;     // static holds on the number, every protocol and address
  std::unordered_map<uint32_t, std::vector<StaticHold>> statics_;  // by staticKey()
  PortBitmap held_;
};

template <typename BecameHeld>
void PortTable::apply(uint32_t slot, const Lease& lease, BecameHeld&& becameHeld) {
  for (const auto& grant : lease.ports) {
    if (!grant.isStatic) {
      for (uint32_t port = grant.hostPort; port < grant.hostPort + uint32_t{grant.count}; ++port) {
        dynamicHolder_[port] = slot + 1;
        if (hold(static_cast<uint16_t>(port))) becameHeld(static_cast<uint16_t>(port));
      }
      continue;
    }
    addStatic(slot, grant);
    if (hold(grant.hostPort)) becameHeld(grant.hostPort);
  }
}

template <typename BecameFree>
void PortTable::unapply(uint32_t slot, const Lease& lease, BecameFree&& becameFree) {
  for (const auto& grant : lease.ports) {
    if (!grant.isStatic) {
      for (uint32_t port = grant.hostPort; port < grant.hostPort + uint32_t{grant.count}; ++port) {
        dynamicHolder_[port] = 0;
        if (freeIfUnheld(static_cast<uint16_t>(port)))
          becameFree(static_cast<uint16_t>(port), true);
      }
      continue;
    }
    removeStatic(slot, grant);
    if (freeIfUnheld(grant.hostPort)) becameFree(grant.hostPort, false);
  }
}

}  // namespace hostport::agent::core
