#pragma once
// Turns granted port mappings and the container's addresses into the exact nftables state one
// attachment should own. Pure: ADD installs the plan and CHECK compares against it.

#include <optional>
#include <string>
#include <vector>

#include "cni-plugin/plugin_config.h"
#include "cni-plugin/prev_result.h"
#include "nft/forward.h"

namespace hostport::cni {

struct AttachmentPlan {
  nft::AttachmentRules rules;
  /// Mappings skipped because the container has no address of their family (portmap skips
  /// them too); each line names the mapping.
  std::vector<std::string> warnings;
  /// The pod address whose route needs route_localnet, when 127.0.0.1 is forwarded (snat, IPv4).
  std::optional<IpAddress> routeLocalnetFor;
  /// Host ports of UDP forwards, whose stale conntrack entries must go.
  std::vector<uint16_t> udpHostPorts;
};

/// kInvalidArgument when two mappings claim one host key with different targets.
Result<AttachmentPlan> planAttachment(const std::string& owner,
                                      const std::vector<PortMapping>& mappings,
                                      const ContainerAddresses& addresses,
                                      const PluginConfig& config);

/// The UDP host ports among `forwards`, each once.
std::vector<uint16_t> udpHostPorts(const std::vector<nft::Forward>& forwards);

}  // namespace hostport::cni
