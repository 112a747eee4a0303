#include "forwards/lease_forwards.h"

#include "nft/forward.h"

namespace hostport::forwards {
namespace {

/// Conditions come from the plugin's config through the socket: checked again before they can
/// reach nft text, whoever sent them.
Result<std::string> checkedConditions(const std::string& conditions) {
  if (conditions.empty()) return conditions;
  return nft::validateConditions({conditions});
}

}  // namespace

std::vector<nft::PortMapping> mappingsOf(const Lease& lease) {
  std::vector<nft::PortMapping> mappings;
  for (const auto& grant : lease.ports) {
    for (const auto protocol : kernelProtocols(grant.protocol)) {
      for (uint16_t i = 0; i < grant.count; ++i) {
        mappings.push_back({static_cast<uint16_t>(grant.hostPort + i),
                            static_cast<uint16_t>(grant.containerPort + i), protocol,
                            grant.hostIp});
      }
    }
  }
  return mappings;
}

nft::PodTarget podTargetOf(const Forwarding& forwarding) {
  return {forwarding.podV4,   forwarding.podV6,        forwarding.snat,
          forwarding.masqAll, forwarding.conditionsV4, forwarding.conditionsV6};
}

Result<std::string> ownerOf(const AttachmentKey& key) {
  return nft::makeOwner(key.containerId, key.ifname);
}

std::optional<AttachmentKey> keyOfOwner(std::string_view owner) {
  if (!nft::isOwnerTag(owner)) return std::nullopt;
  const auto slash = owner.find('/');
  return AttachmentKey{std::string(owner.substr(0, slash)), std::string(owner.substr(slash + 1))};
}

Result<nft::AttachmentPlan> planOf(const Lease& lease) {
  if (!lease.forwarding) {
    return fail(ErrorCode::kInvalidArgument, "the lease of " + lease.key.str() +
                                                 " has no forwarding record: it forwards nothing");
  }
  HOSTPORT_TRY(const std::string owner, ownerOf(lease.key));
  nft::PodTarget target = podTargetOf(*lease.forwarding);
  HOSTPORT_TRY(target.conditionsV4, checkedConditions(target.conditionsV4));
  HOSTPORT_TRY(target.conditionsV6, checkedConditions(target.conditionsV6));
  return nft::planAttachment(owner, mappingsOf(lease), target);
}

}  // namespace hostport::forwards
