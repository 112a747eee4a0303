#include "nft/attachment_plan.h"

#include <algorithm>

namespace hostport::nft {
namespace {

/// "tcp [2001:db8::1]:80 -> 80", or "tcp *:80 -> 80" without a hostIP.
std::string describeMapping(const PortMapping& mapping) {
  const std::string host = mapping.hostIp ? describeEndpoint(*mapping.hostIp, mapping.hostPort)
                                          : "*:" + std::to_string(mapping.hostPort);
  return std::string(protocolName(mapping.protocol)) + " " + host + " -> " +
         std::to_string(mapping.containerPort);
}

bool sameHostKey(const Forward& a, const Forward& b) {
  return a.family() == b.family() && a.protocol == b.protocol && a.hostPort == b.hostPort &&
         a.hostIp == b.hostIp;
}

/// Who gets masqueraded after DNAT to this pod: hairpin and same-subnet peers (whose replies
/// would otherwise bypass the host) and localhost when snat is on; everyone with masqAll.
void planMasquerade(const IpPrefix& pod, const PodTarget& target, AttachmentRules& rules) {
  if (target.masqAll) {
    rules.masquerades.push_back({pod.address, MasqueradeScope::kEverySource});
  } else if (target.snat) {
    rules.masquerades.push_back({pod.address, MasqueradeScope::kPodSubnet});
    rules.podSubnets.push_back(pod.network());
  }
}

}  // namespace

Result<AttachmentPlan> planAttachment(const std::string& owner,
                                      const std::vector<PortMapping>& mappings,
                                      const PodTarget& target) {
  AttachmentPlan plan;
  plan.rules.owner = owner;
  bool usesV4 = false, usesV6 = false;
  for (const auto& mapping : mappings) {
    bool forwarded = false;
    for (const auto& pod : {target.v4, target.v6}) {
      if (!pod) continue;
      const Family family = pod->address.family();
      if (mapping.hostIp && mapping.hostIp->family() != family) continue;
      Forward forward{mapping.protocol,
                      mapping.hostIp,
                      mapping.hostPort,
                      pod->address,
                      mapping.containerPort,
                      family == Family::kIPv4 ? target.conditionsV4 : target.conditionsV6};
      auto clash = std::ranges::find_if(
          plan.rules.forwards, [&](const Forward& other) { return sameHostKey(other, forward); });
      if (clash != plan.rules.forwards.end()) {
        if (*clash == forward) {
          forwarded = true;
          continue;
        }
        return fail(ErrorCode::kInvalidArgument, "runtimeConfig.portMappings: host port " +
                                                     describe(forward) + " is also mapped as " +
                                                     describe(*clash));
      }
      (family == Family::kIPv4 ? usesV4 : usesV6) = true;
      plan.rules.forwards.push_back(std::move(forward));
      forwarded = true;
    }
    if (!forwarded) {
      plan.warnings.push_back("skipping port mapping " + describeMapping(mapping) +
                              ": the container has no address of its family");
    }
  }
  for (const auto& [used, pod] : {std::pair{usesV4, target.v4}, std::pair{usesV6, target.v6}}) {
    if (used) planMasquerade(*pod, target, plan.rules);
  }
  if (usesV4 && target.snat) plan.routeLocalnetFor = target.v4->address;
  plan.udpHostPorts = udpHostPorts(plan.rules.forwards);
  return plan;
}

std::vector<IpPrefix> podSubnetsOf(const PodTarget& target) {
  std::vector<IpPrefix> subnets;
  if (target.masqAll || !target.snat) return subnets;
  for (const auto& pod : {target.v4, target.v6}) {
    if (pod) subnets.push_back(pod->network());
  }
  return subnets;
}

Result<void> requireForwards(const AttachmentPlan& plan) {
  // One warning per skipped mapping: with no forward, every mapping was skipped.
  if (!plan.rules.forwards.empty() || plan.warnings.empty()) return {};
  return fail(ErrorCode::kInvalidArgument,
              "none of the " + std::to_string(plan.warnings.size()) +
                  " port mapping(s) can be forwarded, so their ports would be held for nothing (" +
                  plan.warnings.front() + ")");
}

std::vector<uint16_t> udpHostPorts(const std::vector<Forward>& forwards) {
  std::vector<uint16_t> ports;
  for (const auto& forward : forwards) {
    if (forward.protocol == Protocol::kUdp) ports.push_back(forward.hostPort);
  }
  std::ranges::sort(ports);
  ports.erase(std::ranges::unique(ports).begin(), ports.end());
  return ports;
}

}  // namespace hostport::nft
