#include "agent/forwards/plan_writer.h"

namespace hostport::agent::forwards {

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

}  // namespace hostport::agent::forwards
