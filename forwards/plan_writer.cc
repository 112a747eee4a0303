#include "forwards/plan_writer.h"

#include <algorithm>

namespace hostport::forwards {

Result<void> refuseNodeTargets(const nft::AttachmentPlan& plan, const HostNetworkAccess& network) {
  std::vector<IpAddress> targets;
  for (const auto& forward : plan.rules.forwards) {
    if (std::ranges::find(targets, forward.containerIp) == targets.end()) {
      targets.push_back(forward.containerIp);
    }
  }
  if (targets.empty()) return {};
  HOSTPORT_TRY(auto* host, network());
  for (const IpAddress& target : targets) {
    auto local = host->isLocalAddress(target);
    if (!local) return withContext(local.error(), "checking pod address " + target.str());
    if (*local) {
      return fail(ErrorCode::kInvalidArgument,
                  "pod address " + target.str() +
                      " is an address of this node (the kernel routes it as local): a DNAT to "
                      "it would reach the node's own services, not a pod");
    }
  }
  return {};
}

Result<void> writePlan(const nft::AttachmentPlan& plan, nft::Ruleset& rules,
                       const HostNetworkAccess& network, WriteReport& report) {
  if (plan.rules.empty()) return {};
  HOSTPORT_TRY_VOID(rules.install(plan.rules));
  if (plan.routeLocalnetFor) {
    auto host = network();
    auto enabled = host ? (*host)->enableRouteLocalnet(*plan.routeLocalnetFor)
                        : Result<void>(std::unexpected(host.error()));
    if (!enabled) {
      if (auto undone = rules.removeExact(plan.rules); !undone)
        report.rollbackFailed(undone.error());
      return withContext(enabled.error(), "enabling route_localnet");
    }
  }
  flushUdpConntrack(plan.udpHostPorts, network, report);
  return {};
}

void flushUdpConntrack(const std::vector<uint16_t>& ports, const HostNetworkAccess& network,
                       WriteReport& report) {
  if (ports.empty()) return;
  auto host = network();
  auto flushed =
      host ? (*host)->flushUdpConntrack(ports) : Result<int>(std::unexpected(host.error()));
  if (flushed) return;
  for (const uint16_t port : ports) report.conntrackFlushFailed(port, flushed.error());
}

}  // namespace hostport::forwards
