#pragma once
// Writing one attachment's plan to the kernel, the same way whoever writes: the agent in agent
// mode, the plugin standalone (and for leases of an agent that does not install forwards). Only
// how each reports what went wrong without failing differs: the plugin on stderr, the agent as
// events with the lease's key.

#include <cstdint>
#include <functional>
#include <span>
#include <vector>

#include "common/error.h"
#include "hostnet/host_network.h"
#include "nft/attachment_plan.h"
#include "nft/ruleset.h"

namespace hostport::forwards {

/// What writing a plan met that does not fail it.
class WriteReport {
 public:
  virtual ~WriteReport() = default;
  /// route_localnet failed and the rules installed for it could not be taken back.
  virtual void rollbackFailed(const Error& cause) = 0;
  /// A stale UDP flow of `port` could not be flushed: it delays traffic to the new pod for a
  /// while, which is not worth failing the pod for.
  virtual void conntrackFlushFailed(uint16_t port, const Error& cause) = 0;
};

/// The host network, made when first needed (the plugin opens it lazily; most plans never do).
using HostNetworkAccess = std::function<Result<hostnet::HostNetwork*>()>;

/// Installs the plan's rules (all or nothing), sets route_localnet for the pod when 127.0.0.1 is
/// forwarded, then flushes stale UDP conntrack of its host ports. A failed route_localnet takes
/// the rules back (exactly them, by key): no attachment is left half installed. kConflict when
/// another owner holds a key.
Result<void> writePlan(const nft::AttachmentPlan& plan, nft::Ruleset& rules,
                       const HostNetworkAccess& network, WriteReport& report);

/// writePlan() for many plans at once, none with conditions: one transaction for all their rules
/// (Ruleset::installMany), then route_localnet where one asks, then one conntrack flush for all
/// their UDP ports. When the transaction is refused, each plan is written on its own, so the
/// others go in and the one refused says why. Each plan's result, in order.
std::vector<Result<void>> writePlans(std::span<const nft::AttachmentPlan> plans,
                                     nft::Ruleset& rules, const HostNetworkAccess& network,
                                     WriteReport& report);

/// kInvalidArgument when a forward of the plan targets an address the node itself holds
/// (HostNetwork::isLocalAddress): a DNAT to it reaches the node's own services, never a pod. One
/// route lookup per pod address; run before a new attachment's first write (ADD), not on every
/// restore, where it would cost a lookup per lease at a flush repair.
Result<void> refuseNodeTargets(const nft::AttachmentPlan& plan, const HostNetworkAccess& network);

/// Deletes UDP conntrack entries of the ports (one walk of the table per family), reporting each
/// port when that fails.
void flushUdpConntrack(const std::vector<uint16_t>& ports, const HostNetworkAccess& network,
                       WriteReport& report);

}  // namespace hostport::forwards
