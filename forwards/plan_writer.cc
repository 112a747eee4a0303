#include "forwards/plan_writer.h"

#include <algorithm>
#include <iterator>

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

namespace {

/// What follows the install of a plan's rules: route_localnet when 127.0.0.1 is forwarded; when
/// that fails, the rules go again (exactly them, by key).
Result<void> enableRouteLocalnet(const nft::AttachmentPlan& plan, nft::Ruleset& rules,
                                 const HostNetworkAccess& network, WriteReport& report) {
  if (!plan.routeLocalnetFor) return {};
  auto host = network();
  auto enabled = host ? (*host)->enableRouteLocalnet(*plan.routeLocalnetFor)
                      : Result<void>(std::unexpected(host.error()));
  if (enabled) return {};
  if (auto undone = rules.removeExact(plan.rules); !undone) report.rollbackFailed(undone.error());
  return withContext(enabled.error(), "enabling route_localnet");
}

}  // namespace

Result<void> writePlan(const nft::AttachmentPlan& plan, nft::Ruleset& rules,
                       const HostNetworkAccess& network, WriteReport& report) {
  if (plan.rules.empty()) return {};
  HOSTPORT_TRY_VOID(rules.install(plan.rules));
  HOSTPORT_TRY_VOID(enableRouteLocalnet(plan, rules, network, report));
  flushUdpConntrack(plan.udpHostPorts, network, report);
  return {};
}

std::vector<Result<void>> writePlans(std::span<const nft::AttachmentPlan> plans,
                                     nft::Ruleset& rules, const HostNetworkAccess& network,
                                     WriteReport& report) {
  std::vector<const nft::AttachmentRules*> batch;
  for (const nft::AttachmentPlan& plan : plans) {
    if (!plan.rules.empty()) batch.push_back(&plan.rules);
  }
  std::vector<Result<void>> results;
  results.reserve(plans.size());
  if (!rules.installMany(batch)) {
    for (const nft::AttachmentPlan& plan : plans) {
      results.push_back(writePlan(plan, rules, network, report));
    }
    return results;
  }
  // route_localnet for all of them at once, each interface written once; when that fails, each
  // on its own, so only the plans whose interface refuses it are taken back.
  std::vector<IpAddress> localnetFor;
  for (const nft::AttachmentPlan& plan : plans) {
    if (plan.routeLocalnetFor) localnetFor.push_back(*plan.routeLocalnetFor);
  }
  auto host = localnetFor.empty() ? Result<hostnet::HostNetwork*>(nullptr) : network();
  const bool allEnabled =
      localnetFor.empty() || (host && (*host)->enableRouteLocalnet(localnetFor));
  std::vector<uint16_t> udpPorts;
  for (const nft::AttachmentPlan& plan : plans) {
    results.push_back(allEnabled ? Result<void>{}
                                 : enableRouteLocalnet(plan, rules, network, report));
    if (results.back()) std::ranges::copy(plan.udpHostPorts, std::back_inserter(udpPorts));
  }
  flushUdpConntrack(udpPorts, network, report);
  return results;
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
