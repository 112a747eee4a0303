#include "agent/core/allocator.h"

// Occupancy is kept per port number in dense arrays (65536 entries each, about 0.5 MiB in all)
// rather than maps of sets: the dynamic holder of each number, the count of static claims on it,
// and one bit "held by anyone" that the pickers scan. Static claims, which may share a number
// across protocols and addresses, keep their details in a small hash map keyed by
// (protocol, port).
//
// A request is checked in full before anything changes: ports chosen by earlier rows and ports
// found busy on the host are set aside in a scratch bitmap that is cleared on every exit. Only a
// request that succeeded touches the tables, the pickers' order and the sticky memory, so a
// failure leaves no trace.
//
// Released dynamic ports wait in their pool's quarantine (quarantine.h). The strategy picks from
// a view that hides them; only when it finds nothing does a row fall back to them, oldest release
// first for one port, the strategy's own order for a contiguous run. Expired entries are retired
// lazily, when the pool is next asked for ports, so no timer and no scan of the pool.
//
// Leases are held packed (packed_lease.h), one small heap block each, in a slot table; the key
// index is a hash set of slot numbers hashed through the packed key bytes, so each key is kept
// once. A Lease is unpacked only to answer a call or to report a conflict.
//
// Pool rules (pool_rules.h) are judged on counts kept as leases come and go: ports per namespace
// for every pool (a handful of namespaces, and `hostportctl pools` shows them), ports per pod only
// for a pool with maxPortsPerPod (one entry per pod would cost ~100 bytes a lease), rebuilt from
// the leases when a reload sets that quota.

#include <algorithm>
#include <map>
#include <random>
#include <unordered_map>

#include "agent/core/packed_lease.h"
#include "agent/core/port_picker.h"
#include "agent/core/quarantine.h"
#include "agent/core/sticky_memory.h"
#include "agent/core/string_table.h"
#include "common/id_index.h"
#include "common/identifiers.h"
#include "common/quote.h"

namespace hostport::agent::core {
namespace {

constexpr std::size_t kPortSpace = 65536;
constexpr uint16_t kNoPool = UINT16_MAX;
// Host-busy candidates one request may skip before giving up, so a host that binds the whole
// pool cannot make one request probe it for ever.
constexpr uint32_t kMaxHostRejections = 1024;

ProtocolSet protocolsOf(PortProtocol protocol) {
  ProtocolSet set;
  for (const auto kernel : kernelProtocols(protocol)) set.add(kernel);
  return set;
}

std::string namesOf(ProtocolSet set) {
  std::string out;
  for (const Protocol protocol : kAllProtocols) {
    if (!set.contains(protocol)) continue;
    if (!out.empty()) out += ", ";
    out += protocolName(protocol);
  }
  return out;
}

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

/// A key as it goes into a message: a valid one ("containerId/ifname") is never cut.
std::string quotedKey(const AttachmentKey& key) {
  return quoteText(key.str(), kMaxContainerIdLength + 1 + kMaxIfnameLength);
}

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

std::string_view strategyName(Strategy strategy) {
  switch (strategy) {
    case Strategy::kLowest:
      return "lowest";
    case Strategy::kRandom:
      return "random";
    case Strategy::kRoundRobin:
      return "round-robin";
  }
  return "lowest";
}

Result<Strategy> parseStrategy(std::string_view text) {
  for (const auto strategy : {Strategy::kLowest, Strategy::kRandom, Strategy::kRoundRobin}) {
    if (text == strategyName(strategy)) return strategy;
  }
  return fail(ErrorCode::kInvalidArgument,
              "unknown strategy " + quoteText(text) + " (want lowest, random or round-robin)");
}

struct Allocator::State {
  struct Pool {
    std::string name;
    ProtocolSet protocols = ProtocolSet::all();  // kernel protocols allowed
    uint32_t used = 0;                           // ports of the pool held by some lease
    std::unique_ptr<PortPicker> picker;
    Quarantine quarantine;
    PoolRules rules;
    std::unordered_map<std::string, uint32_t> namespaceUse;  // ports held, by namespace
    /// Ports held, by podQuotaKey(); kept only while the pool has maxPortsPerPod.
    std::optional<std::unordered_map<std::string, uint32_t>> podUse;
  };
  struct StaticHold {
    uint32_t lease;
    std::optional<IpAddress> hostIp;  // normalised: nullopt is every address
  };

  // Request scratch: the ports a request has set aside. Cleared by Scratch on every exit.
  struct Scratch {
    explicit Scratch(State& state) : state_(state) {}
    ~Scratch() {
      for (const uint16_t port : state_.excludedPorts) state_.excluded.reset(port);
      state_.excludedPorts.clear();
    }
    Scratch(const Scratch&) = delete;
    Scratch& operator=(const Scratch&) = delete;

   private:
    State& state_;
  };

  std::optional<std::size_t> findPool(std::string_view name) const {
    for (std::size_t i = 0; i < pools.size(); ++i) {
      if (pools[i].name == name) return i;
    }
    return std::nullopt;
  }

  std::optional<uint32_t> findSlot(std::string_view keyBytes) const {
    return index.find(hashOfBytes(keyBytes),
                      [&](uint32_t slot) { return slots[slot].keyBytes() == keyBytes; });
  }

  std::optional<uint32_t> findSlot(const AttachmentKey& key) const {
    std::string bytes;
    PackedLease::packKey(key, bytes);
    return findSlot(bytes);
  }

  Lease leaseAt(uint32_t slot) const { return slots[slot].unpack(strings); }

  // The live slots in key order. The keys are unpacked into one buffer and compared there, so
  // sorting allocates nothing per comparison.
  std::vector<uint32_t> keyOrder() const {
    struct Entry {
      std::size_t at;  // in `text`: the container ID, then the ifname
      uint32_t idLength;
      uint32_t ifnameLength;
      uint32_t slot;
    };
    std::vector<Entry> entries;
    entries.reserve(index.size());
    std::string text;
    for (uint32_t slot = 0; slot < slots.size(); ++slot) {
      if (slots[slot].empty()) continue;
      const AttachmentKey key = slots[slot].key();
      entries.push_back({text.size(), static_cast<uint32_t>(key.containerId.size()),
                         static_cast<uint32_t>(key.ifname.size()), slot});
      text += key.containerId;
      text += key.ifname;
    }
    const std::string_view all(text);
    const auto keyOf = [&](const Entry& entry) {
      return std::pair(all.substr(entry.at, entry.idLength),
                       all.substr(entry.at + entry.idLength, entry.ifnameLength));
    };
    std::ranges::sort(entries, [&](const Entry& a, const Entry& b) { return keyOf(a) < keyOf(b); });
    std::vector<uint32_t> order;
    order.reserve(entries.size());
    for (const Entry& entry : entries) order.push_back(entry.slot);
    return order;
  }

  void exclude(uint16_t port) {
    if (excluded.test(port)) return;
    excluded.set(port);
    excludedPorts.push_back(port);
  }

  // Who holds `port` for `protocol` on an address overlapping `hostIp`, if anyone.
  std::optional<uint32_t> holderOf(Protocol protocol, uint16_t port,
                                   const std::optional<IpAddress>& hostIp) const {
    if (dynamicHolder[port] != 0) return dynamicHolder[port] - 1;
    if (staticRefs[port] == 0) return std::nullopt;
    const auto found = statics.find(staticKey(protocol, port));
    if (found == statics.end()) return std::nullopt;
    for (const auto& hold : found->second) {
      if (overlaps(hold.hostIp, hostIp)) return hold.lease;
    }
    return std::nullopt;
  }

  // Any holder of the number `port`, in any protocol (what a dynamic grant needs free).
  std::optional<std::pair<uint32_t, Protocol>> anyHolderOf(uint16_t port) const {
    for (const Protocol protocol : kAllProtocols) {
      if (const auto holder = holderOf(protocol, port, std::nullopt)) {
        return std::pair(*holder, protocol);
      }
    }
    return std::nullopt;
  }

  Error heldError(Protocol protocol, uint16_t port, uint32_t holder) const {
    return Error{
        ErrorCode::kConflict,
        "port " + describePort(protocol, port) + " is held by " + describe(leaseAt(holder)),
        {}};
  }

  // heldError(), with the lease as the refused static claim's holder.
  AllocationError heldConflict(Protocol protocol, uint16_t port, uint32_t holder) const {
    return {heldError(protocol, port, holder), Conflict{protocol, port, leaseAt(holder), {}}};
  }

  void hold(uint16_t port) {
    if (held.test(port)) return;
    held.set(port);
    if (poolOf[port] == kNoPool) return;
    Pool& pool = pools[poolOf[port]];
    ++pool.used;
    pool.picker->taken(port);
    pool.quarantine.remove(port);  // granted anyway: the last free port, sticky, or static
  }

  // `releasedAt` set: a dynamic port going into its pool's quarantine. Static claims never do.
  void releaseIfUnheld(uint16_t port, std::optional<Quarantine::TimePoint> releasedAt) {
    if (dynamicHolder[port] != 0 || staticRefs[port] != 0 || !held.test(port)) return;
    held.reset(port);
    if (poolOf[port] == kNoPool) return;
    Pool& pool = pools[poolOf[port]];
    --pool.used;
    pool.picker->released(port);
    if (releasedAt) pool.quarantine.add(port, *releasedAt);
  }

  void apply(uint32_t slot, const Lease& lease) {
    for (const auto& grant : lease.ports) {
      if (!grant.isStatic) {
        for (uint32_t port = grant.hostPort; port < grant.hostPort + grant.count; ++port) {
          dynamicHolder[port] = slot + 1;
          hold(static_cast<uint16_t>(port));
        }
        continue;
      }
      for (const auto protocol : kernelProtocols(grant.protocol)) {
        statics[staticKey(protocol, grant.hostPort)].push_back({slot, addressOf(grant.hostIp)});
        ++staticRefs[grant.hostPort];
      }
      hold(grant.hostPort);
    }
  }

  void unapply(uint32_t slot, const Lease& lease, Quarantine::TimePoint now) {
    for (const auto& grant : lease.ports) {
      if (!grant.isStatic) {
        for (uint32_t port = grant.hostPort; port < grant.hostPort + grant.count; ++port) {
          dynamicHolder[port] = 0;
          releaseIfUnheld(static_cast<uint16_t>(port), now);
        }
        continue;
      }
      const auto hostIp = addressOf(grant.hostIp);
      for (const auto protocol : kernelProtocols(grant.protocol)) {
        const auto found = statics.find(staticKey(protocol, grant.hostPort));
        if (found == statics.end()) continue;
        auto& holds = found->second;
        const auto hold = std::ranges::find_if(
            holds, [&](const StaticHold& h) { return h.lease == slot && h.hostIp == hostIp; });
        if (hold == holds.end()) continue;
        holds.erase(hold);
        if (holds.empty()) statics.erase(found);
        --staticRefs[grant.hostPort];
      }
      releaseIfUnheld(grant.hostPort, std::nullopt);
    }
  }

  // Takes `lease`, packed with `pool` (a pool's own name) in place of lease.pool.
  void commit(PackedLease packed, const Lease& lease, std::string_view pool) {
    uint32_t slot;
    if (freeSlots.empty()) {
      slot = static_cast<uint32_t>(slots.size());
      slots.emplace_back();
    } else {
      slot = freeSlots.back();
      freeSlots.pop_back();
    }
    slots[slot] = std::move(packed);
    index.insert(slot, hashOfBytes(slots[slot].keyBytes()));
    apply(slot, lease);
    // Every pool its ports are in: a static claim may lie in another pool than the lease's.
    for (std::size_t i = 0; i < pools.size(); ++i) account(i, lease, true);
    if (lease.sticky) {
      sticky.remember(lease.pod, pool, lease.ports);
    } else {
      sticky.forget(lease.pod);
    }
  }

  // The ports of a lease's rows (or a request's) that lie in pool `poolIndex`: what its rules
  // count (pool_rules.h).
  uint32_t portsInPool(const std::vector<PortGrant>& ports, std::size_t poolIndex) const {
    uint32_t count = 0;
    for (const auto& grant : ports) {
      for (uint32_t port = grant.hostPort; port < grant.hostPort + uint32_t{grant.count}; ++port) {
        count += poolOf[port] == poolIndex ? 1 : 0;
      }
    }
    return count;
  }

  // What `request` asks of pool `poolIndex`: its dynamic rows when that is the request's pool,
  // and its static claims in that pool's ranges, whichever pool the request names (a static
  // hostPort takes the port from the pool whose range holds it). A claim repeated is one, as
  // claimStatics() counts it.
  uint32_t askedOf(const AllocationRequest& request, std::size_t poolIndex,
                   std::size_t requestPool) const {
    uint32_t asked = 0;
    if (poolIndex == requestPool) {
      for (const auto& row : request.dynamics) asked += row.count;
    }
    for (std::size_t i = 0; i < request.statics.size(); ++i) {
      const auto& claim = request.statics[i];
      const bool repeated =
          std::any_of(request.statics.begin(), request.statics.begin() + static_cast<long>(i),
                      [&](const StaticPortClaim& earlier) { return earlier == claim; });
      if (!repeated && poolOf[claim.hostPort] == poolIndex) ++asked;
    }
    return asked;
  }

  // Adds (or takes away) what `lease` holds in the pool to its namespace's and pod's counts.
  void account(std::size_t poolIndex, const Lease& lease, bool add) {
    Pool& pool = pools[poolIndex];
    const uint32_t ports = portsInPool(lease.ports, poolIndex);
    if (ports == 0) return;
    const auto change = [&](std::unordered_map<std::string, uint32_t>& counts,
                            const std::string& key) {
      if (add) {
        counts[key] += ports;
        return;
      }
      const auto found = counts.find(key);
      if (found == counts.end()) return;
      found->second -= std::min(found->second, ports);
      if (found->second == 0) counts.erase(found);
    };
    change(pool.namespaceUse, lease.pod.namespaceName);
    if (pool.podUse) {
      if (const std::string key = podQuotaKey(lease.pod); !key.empty()) change(*pool.podUse, key);
    }
  }

  RuleUsage usageOf(const Pool& pool, const PodIdentity& pod) const {
    RuleUsage usage;
    if (const auto found = pool.namespaceUse.find(pod.namespaceName);
        found != pool.namespaceUse.end()) {
      usage.namespaceHeld = found->second;
    }
    if (pool.podUse) {
      if (const auto found = pool.podUse->find(podQuotaKey(pod)); found != pool.podUse->end()) {
        usage.podHeld = found->second;
      }
    }
    return usage;
  }

  /// The pool named `name`, "default" for an empty name.
  Result<std::size_t> resolvePool(std::string_view name) const {
    const std::string_view wanted = name.empty() ? kDefaultPool : name;
    if (const auto pool = findPool(wanted)) return *pool;
    return fail(ErrorCode::kInvalidArgument, "unknown pool " + quoteText(wanted));
  }

  Result<void> validate(const AllocationRequest& request, const Pool& pool) const;
  std::expected<void, AllocationError> claimStatics(const AllocationRequest& request,
                                                    PortProbe& probe,
                                                    std::vector<PortGrant>& grants);
  Result<void> pickDynamics(const AllocationRequest& request, std::size_t poolIndex,
                            PortProbe& probe, std::vector<PortGrant>& grants);
  Result<void> checkRestore(const Lease& lease);

  std::vector<PoolSpec> specs;
  std::vector<Pool> pools;
  std::vector<uint16_t> poolOf = std::vector<uint16_t>(kPortSpace, kNoPool);
  std::vector<uint32_t> dynamicHolder = std::vector<uint32_t>(kPortSpace, 0);  // slot + 1
  std::vector<uint16_t> staticRefs = std::vector<uint16_t>(kPortSpace, 0);
  PortBitmap held;
  PortBitmap excluded;
  PortBitmap quarantined;  // every pool's quarantine marks its ports here
  std::vector<uint16_t> excludedPorts;
  std::unordered_map<uint32_t, std::vector<StaticHold>> statics;
  std::vector<PackedLease> slots;  // empty: free
  std::vector<uint32_t> freeSlots;
  IdIndex index;        // slot numbers, by the hash of their packed key
  StringTable strings;  // what the packed leases intern
  StickyMemory sticky;
  std::function<uint64_t()> random;
  Clock clock;
  uint64_t hostConflicts = 0;
};

Result<void> Allocator::State::validate(const AllocationRequest& request, const Pool& pool) const {
  if (request.key.containerId.empty() || request.key.ifname.empty()) {
    return fail(ErrorCode::kInvalidArgument, "an attachment needs a container ID and an ifname");
  }
  const std::size_t rows = request.statics.size() + request.dynamics.size();
  if (rows > kMaxPortsPerRequest) {
    return fail(ErrorCode::kInvalidArgument, "too many ports: " + std::to_string(rows) +
                                                 " asked for, at most " +
                                                 std::to_string(kMaxPortsPerRequest));
  }
  for (const auto& claim : request.statics) {
    if (claim.hostPort == 0 || claim.containerPort == 0) {
      return fail(ErrorCode::kInvalidArgument, "static port " + std::to_string(claim.hostPort) +
                                                   ":" + std::to_string(claim.containerPort) +
                                                   " needs ports in 1-65535");
    }
  }
  const uint32_t widest = pool.picker->layout().widestRange();
  for (const auto& row : request.dynamics) {
    const std::string what = "port " + quoteText(row.name);
    if (row.count == 0 || row.count > kMaxRangeWidth) {
      return fail(ErrorCode::kInvalidArgument, what + " asks for " + std::to_string(row.count) +
                                                   " ports (1-" + std::to_string(kMaxRangeWidth) +
                                                   ")");
    }
    if (row.containerPort == 0 || row.containerPort + uint32_t{row.count} - 1 > 65535) {
      return fail(ErrorCode::kInvalidArgument, what + " has container ports outside 1-65535 (" +
                                                   std::to_string(row.containerPort) + " and " +
                                                   std::to_string(row.count) + " ports)");
    }
    if (!pool.protocols.includes(protocolsOf(row.protocol))) {
      return fail(ErrorCode::kInvalidArgument,
                  what + " asks for " + std::string(protocolName(row.protocol)) + " but pool " +
                      quoteText(pool.name) + " allows only " + namesOf(pool.protocols));
    }
    if (row.count > widest) {
      return fail(ErrorCode::kInvalidArgument,
                  what + " asks for " + std::to_string(row.count) +
                      " contiguous ports but the widest range of pool " + quoteText(pool.name) +
                      " has " + std::to_string(widest));
    }
  }
  return {};
}

std::expected<void, AllocationError> Allocator::State::claimStatics(
    const AllocationRequest& request, PortProbe& probe, std::vector<PortGrant>& grants) {
  for (const auto& claim : request.statics) {
    PortGrant grant{"", claim.protocol, claim.hostPort, claim.containerPort, 1, claim.hostIp, true};
    // The same mapping twice (a runtime may repeat one) is one claim; other overlaps inside one
    // pod harm no one.
    if (std::ranges::find(grants, grant) != grants.end()) continue;
    const auto hostIp = addressOf(claim.hostIp);
    for (const auto protocol : kernelProtocols(claim.protocol)) {
      if (const auto holder = holderOf(protocol, claim.hostPort, hostIp)) {
        return std::unexpected(heldConflict(protocol, claim.hostPort, *holder));
      }
    }
    for (const auto protocol : kernelProtocols(claim.protocol)) {
      if (probe.isBound(protocol, claim.hostPort)) {
        ++hostConflicts;
        PortHolder holder = probe.holderOf(protocol, claim.hostPort);
        Error error{ErrorCode::kConflict,
                    "port " + describePort(protocol, claim.hostPort) + " is in use on the host" +
                        describe(holder),
                    {}};
        return std::unexpected(AllocationError(
            std::move(error), Conflict{protocol, claim.hostPort, std::nullopt, std::move(holder)}));
      }
    }
    exclude(claim.hostPort);  // not for this request's dynamic rows
    grants.push_back(std::move(grant));
  }
  return {};
}

Result<void> Allocator::State::pickDynamics(const AllocationRequest& request, std::size_t poolIndex,
                                            PortProbe& probe, std::vector<PortGrant>& grants) {
  Pool& pool = pools[poolIndex];
  const PoolLayout& layout = pool.picker->layout();
  if (pool.quarantine.size() > 0) pool.quarantine.retire(clock());
  const FreeView view(held, excluded, quarantined);  // what the strategy picks from
  const FreeView anyFree(held, excluded);            // quarantined ports too: the last resort
  uint32_t rejections = 0;
  uint32_t askedBefore = 0;  // ports of the pool taken by this request's earlier rows

  for (const auto& row : request.dynamics) {
    const auto kernel = kernelProtocols(row.protocol);
    // True when the host has nothing bound on start..start+count-1; otherwise sets the busy
    // port aside for the rest of the request.
    const auto freeOnHost = [&](uint16_t start) {
      for (uint32_t port = start; port < start + uint32_t{row.count}; ++port) {
        for (const auto protocol : kernel) {
          if (probe.isBound(protocol, static_cast<uint16_t>(port))) {
            exclude(static_cast<uint16_t>(port));
            ++hostConflicts;
            ++rejections;
            return false;
          }
        }
      }
      return true;
    };

    // The first candidate of `stream` that is free on the host, within the rejection bound.
    const auto firstFreeOnHost = [&](CandidateStream& stream) -> std::optional<uint16_t> {
      while (rejections < kMaxHostRejections) {
        const auto candidate = stream.next();
        if (!candidate) return std::nullopt;
        if (freeOnHost(*candidate)) return candidate;
      }
      return std::nullopt;
    };

    std::optional<uint16_t> chosen;
    // A returning pod may have its ports back while they are quarantined: the delay protects
    // other pods from its traffic, not the pod itself.
    if (const auto previous =
            request.sticky ? sticky.previous(request.pod, pool.name, row) : std::nullopt) {
      const PortRange* range = layout.rangeOf(*previous);
      if (range != nullptr && *previous + uint32_t{row.count} - 1 <= range->last &&
          anyFree.isRunFree(*previous, row.count) && freeOnHost(*previous)) {
        chosen = previous;
      }
    }
    if (!chosen) chosen = firstFreeOnHost(*pool.picker->candidates(view, row.count));
    if (!chosen && pool.quarantine.size() > 0) {
      chosen = firstFreeOnHost(row.count == 1 ? *pool.quarantine.candidates(anyFree)
                                              : *pool.picker->candidates(anyFree, row.count));
    }
    if (!chosen) {
      std::string message = "pool " + quoteText(pool.name) + " has no ";
      message += row.count == 1 ? std::string("free port")
                                : std::to_string(row.count) + " contiguous free ports";
      message +=
          " (size " + std::to_string(layout.size()) + ", " + std::to_string(pool.used) + " in use";
      if (askedBefore > 0) message += ", " + std::to_string(askedBefore) + " asked by this pod";
      if (rejections > 0) message += ", " + std::to_string(rejections) + " busy on the host";
      message += ")";
      if (rejections >= kMaxHostRejections) message += "; gave up probing";
      return fail(ErrorCode::kExhausted, message);
    }
    for (uint32_t port = *chosen; port < *chosen + uint32_t{row.count}; ++port) {
      exclude(static_cast<uint16_t>(port));
    }
    askedBefore += row.count;
    grants.push_back(PortGrant{row.name, row.protocol, *chosen, row.containerPort, row.count,
                               std::nullopt, false});
  }
  return {};
}

Result<void> Allocator::State::checkRestore(const Lease& lease) {
  if (lease.ports.size() > kMaxPortsPerRequest) {
    return fail(ErrorCode::kInvalidArgument,
                "lease of " + quotedKey(lease.key) + " has too many ports");
  }
  // Dynamic numbers first, so a static grant of the same lease on one of them is caught too.
  for (const auto& grant : lease.ports) {
    if (grant.hostPort == 0 || grant.count == 0 || grant.count > kMaxRangeWidth ||
        (grant.isStatic && grant.count != 1) ||
        grant.hostPort + uint32_t{grant.count} - 1 > 65535) {
      return fail(ErrorCode::kInvalidArgument, "lease of " + quotedKey(lease.key) +
                                                   " has a malformed grant at port " +
                                                   std::to_string(grant.hostPort));
    }
    if (grant.isStatic) continue;
    for (uint32_t number = grant.hostPort; number < grant.hostPort + uint32_t{grant.count};
         ++number) {
      const auto port = static_cast<uint16_t>(number);
      if (const auto holder = anyHolderOf(port)) {
        return withContext(heldError(holder->second, port, holder->first),
                           "restoring " + quotedKey(lease.key));
      }
      if (excluded.test(port)) {
        return fail(ErrorCode::kConflict, "restoring " + quotedKey(lease.key) + ": port " +
                                              std::to_string(port) +
                                              " is granted twice in the lease");
      }
      exclude(port);
    }
  }
  for (const auto& grant : lease.ports) {
    if (!grant.isStatic) continue;
    const auto hostIp = addressOf(grant.hostIp);
    for (const auto protocol : kernelProtocols(grant.protocol)) {
      if (const auto holder = holderOf(protocol, grant.hostPort, hostIp)) {
        return withContext(heldError(protocol, grant.hostPort, *holder),
                           "restoring " + quotedKey(lease.key));
      }
    }
    if (excluded.test(grant.hostPort)) {
      return fail(ErrorCode::kConflict, "restoring " + quotedKey(lease.key) + ": port " +
                                            std::to_string(grant.hostPort) +
                                            " is both static and dynamic in the lease");
    }
  }
  return {};
}

Result<Allocator> Allocator::create(std::vector<PoolSpec> pools, std::function<uint64_t()> random,
                                    Clock clock, std::size_t stickyCapacity) {
  auto state = std::make_unique<State>();
  state->sticky = StickyMemory(stickyCapacity);
  if (!random) {
    random = [engine = std::mt19937_64(std::random_device{}())]() mutable { return engine(); };
  }
  state->random = std::move(random);
  state->clock = clock ? std::move(clock) : Clock(&std::chrono::steady_clock::now);
  if (pools.size() >= kNoPool) return fail(ErrorCode::kInvalidArgument, "too many pools");

  for (std::size_t index = 0; index < pools.size(); ++index) {
    const PoolSpec& spec = pools[index];
    const std::string name = quoteText(spec.name);
    if (spec.name.empty()) return fail(ErrorCode::kInvalidArgument, "a pool needs a name");
    if (state->findPool(spec.name)) {
      return fail(ErrorCode::kInvalidArgument, "duplicate pool name " + name);
    }
    if (spec.ranges.empty()) {
      return fail(ErrorCode::kInvalidArgument, "pool " + name + " has no port range");
    }
    if (spec.reuseDelaySeconds > kMaxReuseDelaySeconds) {
      return fail(ErrorCode::kInvalidArgument, "pool " + name + " has a reuse delay of " +
                                                   std::to_string(spec.reuseDelaySeconds) +
                                                   " seconds (at most " +
                                                   std::to_string(kMaxReuseDelaySeconds) + ")");
    }
    for (const auto& range : spec.ranges) {
      if (range.first == 0 || range.first > range.last) {
        return fail(ErrorCode::kInvalidArgument,
                    "pool " + name + " has an empty or invalid range " +
                        std::to_string(range.first) + "-" + std::to_string(range.last));
      }
      for (uint32_t port = range.first; port <= range.last; ++port) {
        const uint16_t owner = state->poolOf[port];
        if (owner == kNoPool) {
          state->poolOf[port] = static_cast<uint16_t>(index);
          continue;
        }
        const auto& other = pools[owner];
        const auto otherRange = std::ranges::find_if(
            other.ranges, [&](const PortRange& r) { return r.contains(port) && &r != &range; });
        return fail(ErrorCode::kInvalidArgument,
                    "pool " + name + " range " + range.str() + " overlaps pool " +
                        quoteText(other.name) + " range " +
                        (otherRange != other.ranges.end() ? otherRange->str() : range.str()));
      }
    }
    PoolLayout layout(spec.ranges);
    State::Pool pool{
        spec.name,
        ProtocolSet::all(),
        0,
        nullptr,
        Quarantine(layout, std::chrono::seconds(spec.reuseDelaySeconds), state->quarantined),
        spec.rules,
        {},
        std::nullopt};
    HOSTPORT_TRY_VOID(validatePoolRules(name, spec.rules));
    if (spec.rules.maxPortsPerPod) pool.podUse.emplace();
    if (!spec.protocols.empty()) {
      pool.protocols = {};
      for (const auto protocol : spec.protocols) pool.protocols |= protocolsOf(protocol);
    }
    switch (spec.strategy) {
      case Strategy::kLowest:
        pool.picker = std::make_unique<LowestFreePicker>(std::move(layout));
        break;
      case Strategy::kRandom:
        // One random source for the whole engine, read through the state (which never moves).
        pool.picker = std::make_unique<RandomPicker>(std::move(layout),
                                                     [raw = state.get()] { return raw->random(); });
        break;
      case Strategy::kRoundRobin:
        pool.picker = std::make_unique<RoundRobinPicker>(std::move(layout));
        break;
    }
    state->pools.push_back(std::move(pool));
  }
  state->specs = std::move(pools);
  return Allocator(std::move(state));
}

Allocator::Allocator(std::unique_ptr<State> state) : state_(std::move(state)) {}
Allocator::Allocator(Allocator&&) noexcept = default;
Allocator& Allocator::operator=(Allocator&&) noexcept = default;
Allocator::~Allocator() = default;

std::expected<Lease, AllocationError> Allocator::allocate(const AllocationRequest& request,
                                                          PortProbe& probe) {
  State& state = *state_;
  if (const auto slot = state.findSlot(request.key)) return state.leaseAt(*slot);

  HOSTPORT_TRY(const std::size_t poolIndex, state.resolvePool(request.poolName()));
  HOSTPORT_TRY_VOID(state.validate(request, state.pools[poolIndex]));
  // The rules of every pool the request takes ports from: its own, and any whose range holds one
  // of its static claims.
  for (std::size_t i = 0; i < state.pools.size(); ++i) {
    const uint32_t asked = state.askedOf(request, i, poolIndex);
    if (i != poolIndex && asked == 0) continue;
    const State::Pool& pool = state.pools[i];
    if (auto refused = checkRules(pool.rules, pool.name, request.pod, asked,
                                  state.usageOf(pool, request.pod))) {
      return std::unexpected(AllocationError(std::move(*refused)));
    }
  }

  const State::Scratch scratch(state);
  std::vector<PortGrant> grants;
  grants.reserve(request.statics.size() + request.dynamics.size());
  HOSTPORT_TRY_VOID(state.claimStatics(request, probe, grants));
  HOSTPORT_TRY_VOID(state.pickDynamics(request, poolIndex, probe, grants));
  Lease lease{request.key,       request.pod,        request.netns,   state.pools[poolIndex].name,
              std::move(grants), request.forwarding, request.netnsId, request.sticky};
  state.commit(PackedLease::pack(lease, lease.pool, state.strings), lease, lease.pool);
  return lease;
}

std::optional<Lease> Allocator::release(const AttachmentKey& key) {
  State& state = *state_;
  const auto slot = state.findSlot(key);
  if (!slot) return std::nullopt;
  PackedLease& packed = state.slots[*slot];
  Lease lease = packed.unpack(state.strings);
  // While the packed key, which the index hashes, is still there.
  state.index.erase(hashOfBytes(packed.keyBytes()), [&](uint32_t at) { return at == *slot; });
  state.unapply(*slot, lease, state.clock());
  for (std::size_t i = 0; i < state.pools.size(); ++i) state.account(i, lease, false);
  packed.release(state.strings);
  state.freeSlots.push_back(*slot);
  return lease;
}

Result<void> Allocator::restore(const Lease& lease) {
  State& state = *state_;
  const auto poolIndex = state.resolvePool(lease.pool);
  if (!poolIndex) return withContext(poolIndex.error(), "restoring " + quotedKey(lease.key));
  const std::string& pool = state.pools[*poolIndex].name;
  // Packed first, to look the key up in the form the index holds; a refused lease gives back
  // the references packing took.
  PackedLease packed = PackedLease::pack(lease, pool, state.strings);
  const auto refuse = [&](Error error) -> Result<void> {
    packed.release(state.strings);
    return std::unexpected(std::move(error));
  };
  if (state.findSlot(packed.keyBytes())) {
    return refuse(
        Error{ErrorCode::kConflict,
              "restoring " + quotedKey(lease.key) + ": the attachment already has a lease",
              {}});
  }
  {
    const State::Scratch scratch(state);
    if (auto checked = state.checkRestore(lease); !checked) return refuse(checked.error());
  }
  state.commit(std::move(packed), lease, pool);
  return {};
}

void Allocator::recallSticky(const std::vector<StickyEntry>& entries) {
  for (const auto& entry : entries) state_->sticky.apply(entry);
}

std::vector<StickyEntry> Allocator::stickyEntries() const { return state_->sticky.entries(); }

std::size_t Allocator::stickyPods() const { return state_->sticky.size(); }

Result<void> Allocator::setRules(std::string_view pool, PoolRules rules) {
  State& state = *state_;
  const auto poolIndex = state.findPool(pool);
  if (!poolIndex) return fail(ErrorCode::kNotFound, "unknown pool " + quoteText(pool));
  HOSTPORT_TRY_VOID(validatePoolRules(pool, rules));
  State::Pool& target = state.pools[*poolIndex];
  const bool countPods = rules.maxPortsPerPod.has_value();
  if (countPods && !target.podUse) {
    // The pod counts were not kept without the quota: count the pool's leases once now.
    target.podUse.emplace();
    for (const auto& lease : leases()) {
      if (lease.pool != target.name) continue;
      const std::string key = podQuotaKey(lease.pod);
      const uint32_t ports = state.portsInPool(lease.ports, *poolIndex);
      if (!key.empty() && ports > 0) (*target.podUse)[key] += ports;
    }
  } else if (!countPods) {
    target.podUse.reset();
  }
  target.rules = rules;
  state.specs[*poolIndex].rules = std::move(rules);
  return {};
}

void Allocator::reserve(std::size_t leases) {
  state_->slots.reserve(leases);
  state_->index.reserve(leases);
}

std::optional<Lease> Allocator::find(const AttachmentKey& key) const {
  const auto slot = state_->findSlot(key);
  if (!slot) return std::nullopt;
  return state_->leaseAt(*slot);
}

void Allocator::forEachLease(const std::function<void(const Lease&)>& visit) const {
  for (const uint32_t slot : state_->keyOrder()) visit(state_->leaseAt(slot));
}

std::vector<Lease> Allocator::leases() const {
  std::vector<Lease> out;
  out.reserve(state_->index.size());
  forEachLease([&](const Lease& lease) { out.push_back(lease); });
  return out;
}

std::size_t Allocator::leaseCount() const { return state_->index.size(); }

std::vector<PoolUsage> Allocator::usage() const {
  std::vector<PoolUsage> out;
  out.reserve(state_->pools.size());
  std::optional<Quarantine::TimePoint> now;
  for (auto& pool : state_->pools) {
    if (pool.quarantine.size() > 0) {
      if (!now) now = state_->clock();
      pool.quarantine.retire(*now);  // so the count is what a request would see now
    }
    // Sorted by name, so the answer does not depend on the hash map's order.
    const std::map<std::string_view, uint32_t> byName(pool.namespaceUse.begin(),
                                                      pool.namespaceUse.end());
    std::vector<NamespaceUsage> namespaces;
    namespaces.reserve(byName.size());
    for (const auto& [name, used] : byName) namespaces.push_back({std::string(name), used});
    out.push_back({pool.name, pool.picker->layout().size(), pool.used, pool.quarantine.size(),
                   std::move(namespaces)});
  }
  return out;
}

const std::vector<PoolSpec>& Allocator::pools() const { return state_->specs; }

uint64_t Allocator::hostConflicts() const { return state_->hostConflicts; }

}  // namespace hostport::agent::core
