#include "agent/core/allocator.h"

// The request flow: a request checked and granted, a lease released or restored. What the engine
// keeps lives in parts with one concept each: the pools as configured (pool_spec.h) and as they
// run (pool_state.h: picker, quarantine, rules and their counts, rule_counts.h), who holds each
// port number (port_table.h), and the leases, packed in a slot table (lease_slots.h). This file
// checks a request against them and then changes them together.
//
// A request is checked in full before anything changes: ports chosen by earlier rows and ports
// found busy on the host are set aside in a scratch bitmap (request_scratch.h) that is cleared on
// every exit. Only a request that succeeded touches the tables, the pickers' order and the sticky
// memory, so a failure leaves no trace.
//
// Released dynamic ports wait in their pool's quarantine (quarantine.h). The strategy picks from
// a view that hides them; only when it finds nothing does a row fall back to them, oldest release
// first for one port, the strategy's own order for a contiguous run. Expired entries are retired
// lazily, when the pool is next asked for ports, so no timer and no scan of the pool.

#include <algorithm>
#include <map>
#include <random>

#include "agent/core/cluster_claims.h"
#include "agent/core/lease_slots.h"
#include "agent/core/pool_state.h"
#include "agent/core/port_picker.h"
#include "agent/core/port_table.h"
#include "agent/core/quarantine.h"
#include "agent/core/request_scratch.h"
#include "agent/core/rule_counts.h"
#include "agent/core/sticky_memory.h"
#include "common/quote.h"

namespace hostport::agent::core {
namespace {

// Host-busy candidates one request may skip before giving up, so a host that binds the whole
// pool cannot make one request probe it for ever.
constexpr uint32_t kMaxHostRejections = 1024;

}  // namespace

struct Allocator::State {
  std::optional<std::size_t> findPool(std::string_view name) const {
    for (std::size_t i = 0; i < pools.size(); ++i) {
      if (pools[i].name == name) return i;
    }
    return std::nullopt;
  }

  /// The pool named `name`, "default" for an empty name.
  Result<std::size_t> resolvePool(std::string_view name) const {
    const std::string_view wanted = name.empty() ? kDefaultPool : name;
    if (const auto pool = findPool(wanted)) return *pool;
    return fail(ErrorCode::kInvalidArgument, "unknown pool " + quoteText(wanted));
  }

  // The pool whose ranges hold `port`, or nullptr.
  PoolState* poolAt(uint16_t port) {
    return poolOf[port] == kNoPool ? nullptr : &pools[poolOf[port]];
  }

  // Takes `lease`, packed with `pool` (a pool's own name) in place of lease.pool.
  void commit(PackedLease packed, const Lease& lease, std::string_view pool) {
    const uint32_t slot = slots.insert(std::move(packed), lease);
    ports.apply(slot, lease, [this](uint16_t port) {
      if (PoolState* pool = poolAt(port)) pool->taken(port);
    });
    // Every pool its ports are in: a static claim may lie in another pool than the lease's.
    for (std::size_t i = 0; i < pools.size(); ++i) {
      pools[i].counts.add(lease.pod, portsInPool(lease.ports, poolOf, i));
    }
    if (lease.sticky) {
      sticky.remember(lease.pod, pool, lease.ports);
    } else {
      sticky.forget(lease.pod);
    }
  }

  Result<void> validate(const AllocationRequest& request, const PoolState& pool) const;
  /// Everything judged before a port is picked: the pool (its index), the rows, and the rules of
  /// every pool the request takes ports from (its own, and any whose range holds one of its
  /// static claims), given what `usageIn(pool)` says the pod and its namespace hold there.
  /// `demanded(pool, ports)` hears what the request takes from each of those pools.
  template <typename UsageIn, typename Demanded>
  std::expected<std::size_t, AllocationError> judge(const AllocationRequest& request,
                                                    UsageIn usageIn, Demanded demanded) const {
    HOSTPORT_TRY(const std::size_t poolIndex, resolvePool(request.poolName()));
    HOSTPORT_TRY_VOID(validate(request, pools[poolIndex]));
    for (std::size_t i = 0; i < pools.size(); ++i) {
      const uint32_t asked = askedOf(request, poolOf, i, poolIndex);
      if (i != poolIndex && asked == 0) continue;
      const PoolState& pool = pools[i];
      if (auto refused = checkRules(pool.rules, pool.name, request.pod, asked, usageIn(pool))) {
        return std::unexpected(AllocationError(std::move(*refused)));
      }
      demanded(pool, asked);
    }
    return poolIndex;
  }
  std::expected<void, AllocationError> claimStatics(const AllocationRequest& request,
                                                    PortProbe& probe,
                                                    std::vector<PortGrant>& grants);
  /// The request as the pools see it: a cluster pool's claims taken out of its static mappings
  /// into `claims` (cluster_claims.h), in `folded`; `request` itself when it touches no cluster
  /// pool.
  Result<const AllocationRequest*> withClusterClaims(const AllocationRequest& request,
                                                     std::optional<ClusterClaims>& claims,
                                                     AllocationRequest& folded) const;
  /// A node pool's rows: picked by the pool's strategy.
  Result<void> pickDynamics(const AllocationRequest& request, std::size_t poolIndex,
                            PortProbe& probe, std::vector<PortGrant>& grants);
  /// A cluster pool's rows: each takes the block its claim names (`firstPorts`, by row), when no
  /// lease holds it and nothing on the host is bound to it.
  Result<void> takeClaimed(const AllocationRequest& request,
                           const std::vector<std::optional<uint16_t>>& firstPorts, PortProbe& probe,
                           std::vector<PortGrant>& grants);
  Result<void> checkRestore(const Lease& lease);

  std::vector<PoolSpec> specs;
  std::vector<PoolState> pools;
  PoolOfPort poolOf;
  PortTable ports;         // who holds each port number
  LeaseSlots slots;        // the leases, packed
  RequestScratch scratch;  // what the request being checked has set aside
  PortBitmap quarantined;  // every pool's quarantine marks its ports here
  StickyMemory sticky;
  std::function<uint64_t()> random;
  Clock clock;
  uint64_t hostConflicts = 0;
};

Result<void> Allocator::State::validate(const AllocationRequest& request,
                                        const PoolState& pool) const {
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
    // Container port 0 is a hostNetwork pod's (annotations::PodNetwork::kHost): nothing is
    // forwarded, the pod binds the host port itself; a lease that forwards needs a port to.
    const bool forwardsNowhere = row.containerPort == 0 && !request.forwarding;
    if ((row.containerPort == 0 && !forwardsNowhere) ||
        row.containerPort + uint32_t{row.count} - 1 > 65535) {
      return fail(ErrorCode::kInvalidArgument, what + " has container ports outside 1-65535 (" +
                                                   std::to_string(row.containerPort) + " and " +
                                                   std::to_string(row.count) + " ports)");
    }
    if (!pool.allows(row.protocol)) {
      return fail(ErrorCode::kInvalidArgument,
                  what + " asks for " + std::string(protocolName(row.protocol)) + " but pool " +
                      quoteText(pool.name) + " allows only " + pool.allowedNames());
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
    for (const auto protocol : kernelProtocols(claim.protocol)) {
      if (const auto holder = ports.holderOf(protocol, claim.hostPort, claim.hostIp)) {
        return std::unexpected(heldConflict(protocol, claim.hostPort, slots.leaseAt(*holder)));
      }
    }
    for (const auto protocol : kernelProtocols(claim.protocol)) {
      if (probe.isBound(protocol, claim.hostPort)) {
        ++hostConflicts;
        return std::unexpected(
            boundOnHost(protocol, claim.hostPort, probe.holderOf(protocol, claim.hostPort)));
      }
    }
    scratch.exclude(claim.hostPort);  // not for this request's dynamic rows
    grants.push_back(std::move(grant));
  }
  return {};
}

Result<const AllocationRequest*> Allocator::State::withClusterClaims(
    const AllocationRequest& request, std::optional<ClusterClaims>& claims,
    AllocationRequest& folded) const {
  HOSTPORT_TRY(const std::size_t poolIndex, resolvePool(request.poolName()));
  HOSTPORT_TRY(claims, matchClusterClaims(request, poolIndex, specs, poolOf));
  if (!claims) return &request;
  folded = request;
  folded.statics = claims->statics;
  return &folded;
}

Result<void> Allocator::State::takeClaimed(const AllocationRequest& request,
                                           const std::vector<std::optional<uint16_t>>& firstPorts,
                                           PortProbe& probe, std::vector<PortGrant>& grants) {
  for (std::size_t index = 0; index < request.dynamics.size(); ++index) {
    const DynamicPortRequest& row = request.dynamics[index];
    const uint16_t first = *firstPorts[index];  // requireClaims() saw every row claimed
    for (uint32_t number = first; number < first + uint32_t{row.count}; ++number) {
      const auto port = static_cast<uint16_t>(number);
      if (scratch.excluded(port)) {
        return fail(ErrorCode::kInvalidArgument,
                    "port " + std::to_string(port) + " is claimed twice in the request");
      }
      if (const auto holder = ports.anyHolderOf(port)) {
        return std::unexpected(heldError(holder->second, port, slots.leaseAt(holder->first)));
      }
      for (const auto protocol : kernelProtocols(row.protocol)) {
        if (probe.isBound(protocol, port)) {
          ++hostConflicts;
          return std::unexpected(
              Error(boundOnHost(protocol, port, probe.holderOf(protocol, port))));
        }
      }
      scratch.exclude(port);
    }
    grants.push_back(PortGrant{row.name, row.protocol, first, row.containerPort, row.count,
                               std::nullopt, false});
  }
  return {};
}

Result<void> Allocator::State::pickDynamics(const AllocationRequest& request, std::size_t poolIndex,
                                            PortProbe& probe, std::vector<PortGrant>& grants) {
  PoolState& pool = pools[poolIndex];
  const PoolLayout& layout = pool.picker->layout();
  if (pool.quarantine.size() > 0) pool.quarantine.retire(clock());
  const FreeView view(ports.held(), scratch.bitmap(), quarantined);  // what the strategy picks
  const FreeView anyFree(ports.held(), scratch.bitmap());  // quarantined ports too: the last resort
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
            scratch.exclude(static_cast<uint16_t>(port));
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
      scratch.exclude(static_cast<uint16_t>(port));
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
      if (const auto holder = ports.anyHolderOf(port)) {
        return withContext(heldError(holder->second, port, slots.leaseAt(holder->first)),
                           "restoring " + quotedKey(lease.key));
      }
      if (scratch.excluded(port)) {
        return fail(ErrorCode::kConflict, "restoring " + quotedKey(lease.key) + ": port " +
                                              std::to_string(port) +
                                              " is granted twice in the lease");
      }
      scratch.exclude(port);
    }
  }
  for (const auto& grant : lease.ports) {
    if (!grant.isStatic) continue;
    for (const auto protocol : kernelProtocols(grant.protocol)) {
      if (const auto holder = ports.holderOf(protocol, grant.hostPort, grant.hostIp)) {
        return withContext(heldError(protocol, grant.hostPort, slots.leaseAt(*holder)),
                           "restoring " + quotedKey(lease.key));
      }
    }
    if (scratch.excluded(grant.hostPort)) {
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
  HOSTPORT_TRY(state->poolOf, validatePoolSpecs(pools));

  // One random source for the whole engine, read through the state (which never moves).
  const auto engineRandom = [raw = state.get()] { return raw->random(); };
  state->pools.reserve(pools.size());
  for (const PoolSpec& spec : pools) {
    state->pools.emplace_back(spec, state->quarantined, engineRandom);
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
  if (const auto slot = state.slots.find(request.key)) return state.slots.leaseAt(*slot);

  if (request.key.containerId.empty() || request.key.ifname.empty()) {
    return fail(ErrorCode::kInvalidArgument, "an attachment needs a container ID and an ifname");
  }
  std::optional<ClusterClaims> claims;
  AllocationRequest folded;
  HOSTPORT_TRY(const AllocationRequest* const asked,
               state.withClusterClaims(request, claims, folded));
  HOSTPORT_TRY(const std::size_t poolIndex,
               state.judge(
                   *asked, [&](const PoolState& pool) { return pool.counts.usageOf(request.pod); },
                   [](const PoolState&, uint32_t) {}));
  const bool clusterPool = state.specs[poolIndex].scope == PoolScope::kCluster;
  if (clusterPool) {  // matchClusterClaims() sorted out every cluster pool's request
    HOSTPORT_TRY_VOID(requireClaims(request, *claims, state.specs[poolIndex]));
  }

  const RequestScratch::Scope scope(state.scratch);
  std::vector<PortGrant> grants;
  grants.reserve(request.statics.size() + request.dynamics.size());
  HOSTPORT_TRY_VOID(state.claimStatics(*asked, probe, grants));
  HOSTPORT_TRY_VOID(clusterPool ? state.takeClaimed(*asked, claims->firstPorts, probe, grants)
                                : state.pickDynamics(*asked, poolIndex, probe, grants));
  Lease lease{request.key,       request.pod,        request.netns,   state.pools[poolIndex].name,
              std::move(grants), request.forwarding, request.netnsId, request.sticky};
  state.commit(state.slots.pack(lease, lease.pool), lease, lease.pool);
  return lease;
}

std::expected<std::vector<PoolDemand>, AllocationError> Allocator::judge(
    const AllocationRequest& request) const {
  std::vector<PoolDemand> demands;
  // A pod seen after the mutating webhook carries its claims; one seen before does not yet.
  std::optional<ClusterClaims> claims;
  AllocationRequest folded;
  HOSTPORT_TRY(const AllocationRequest* const asked,
               state_->withClusterClaims(request, claims, folded));
  HOSTPORT_TRY_VOID(state_->judge(
      *asked, [](const PoolState&) { return RuleUsage{}; },
      [&](const PoolState& pool, uint32_t ports) {
        demands.push_back({pool.name, ports});
      }));
  // The request's own pool first: the loop met the pools in configuration order.
  const auto own = std::ranges::find(demands, request.poolName(), &PoolDemand::pool);
  std::rotate(demands.begin(), own, own + 1);
  return demands;
}

std::optional<Lease> Allocator::release(const AttachmentKey& key) {
  State& state = *state_;
  const auto slot = state.slots.find(key);
  if (!slot) return std::nullopt;
  Lease lease = state.slots.remove(*slot);
  const auto now = state.clock();
  state.ports.unapply(*slot, lease, [&](uint16_t port, bool dynamic) {
    if (PoolState* pool = state.poolAt(port)) {
      pool->freed(port, dynamic ? std::optional(now) : std::nullopt);
    }
  });
  for (std::size_t i = 0; i < state.pools.size(); ++i) {
    state.pools[i].counts.remove(lease.pod, portsInPool(lease.ports, state.poolOf, i));
  }
  return lease;
}

Result<void> Allocator::restore(const Lease& lease) {
  State& state = *state_;
  const auto poolIndex = state.resolvePool(lease.pool);
  if (!poolIndex) return withContext(poolIndex.error(), "restoring " + quotedKey(lease.key));
  const std::string& pool = state.pools[*poolIndex].name;
  // Packed first, to look the key up in the form the index holds; a refused lease gives back
  // the references packing took.
  PackedLease packed = state.slots.pack(lease, pool);
  const auto refuse = [&](Error error) -> Result<void> {
    state.slots.discard(packed);
    return std::unexpected(std::move(error));
  };
  if (state.slots.find(packed.keyBytes())) {
    return refuse(
        Error{ErrorCode::kConflict,
              "restoring " + quotedKey(lease.key) + ": the attachment already has a lease",
              {}});
  }
  {
    const RequestScratch::Scope scope(state.scratch);
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
  PoolState& target = state.pools[*poolIndex];
  if (rules.maxPortsPerPod && !target.counts.countsPods()) {
    // The pod counts were not kept without the quota: count the pool's leases once now.
    target.counts.countPods(true);
    forEachLease([&](const Lease& lease) {
      if (lease.pool != target.name) return;
      target.counts.addPod(lease.pod, portsInPool(lease.ports, state.poolOf, *poolIndex));
    });
  } else if (!rules.maxPortsPerPod) {
    target.counts.countPods(false);
  }
  target.rules = rules;
  state.specs[*poolIndex].rules = std::move(rules);
  return {};
}

void Allocator::reserve(std::size_t leases) { state_->slots.reserve(leases); }

std::optional<Lease> Allocator::find(const AttachmentKey& key) const {
  const auto slot = state_->slots.find(key);
  if (!slot) return std::nullopt;
  return state_->slots.leaseAt(*slot);
}

void Allocator::forEachLease(const std::function<void(const Lease&)>& visit) const {
  for (const uint32_t slot : state_->slots.keyOrder()) visit(state_->slots.leaseAt(slot));
}

std::vector<Lease> Allocator::leasesOf(const std::vector<uint32_t>& slots) const {
  std::vector<Lease> leases;
  for (const uint32_t slot : slots) leases.push_back(state_->slots.leaseAt(slot));
  std::ranges::sort(leases, {}, &Lease::key);
  return leases;
}

std::vector<Lease> Allocator::leasesInNetns(const NetnsId& netns) const {
  return leasesOf(state_->slots.inNetns(netns));
}

std::vector<Lease> Allocator::leasesOfPod(std::string_view uid) const {
  return leasesOf(state_->slots.ofPod(uid));
}

void Allocator::forEachLeaseHeld(const std::function<void(const Lease&)>& visit) const {
  state_->slots.forEachHeld([&](uint32_t slot) { visit(state_->slots.leaseAt(slot)); });
}

std::optional<uint32_t> Allocator::forEachLeaseHeldFrom(
    uint32_t from, std::size_t count, const std::function<void(const Lease&)>& visit) const {
  return state_->slots.forEachHeldFrom(from, count,
                                       [&](uint32_t slot) { visit(state_->slots.leaseAt(slot)); });
}

std::vector<Lease> Allocator::leases() const {
  std::vector<Lease> out;
  out.reserve(state_->slots.size());
  forEachLease([&](const Lease& lease) { out.push_back(lease); });
  return out;
}

std::size_t Allocator::leaseCount() const { return state_->slots.size(); }

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
    const auto& held = pool.counts.namespaces();
    const std::map<std::string_view, uint32_t> byName(held.begin(), held.end());
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