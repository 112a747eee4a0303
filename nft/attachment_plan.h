#pragma once
// Turns granted port mappings and the pod's addresses into the exact nftables state one
// attachment should own. Pure: whoever writes the table installs the plan (the agent, or the
// plugin standalone), and CHECK compares the kernel against it.

#include <optional>
#include <string>
#include <vector>

#include "common/ip_address.h"
#include "common/protocol.h"
#include "nft/forward.h"

namespace hostport::nft {

/// One port to forward, as CNI's runtimeConfig.portMappings gives it or a lease's grant expands
/// to (one per port of a range and per kernel protocol).
struct PortMapping {
  uint16_t hostPort = 0;
  uint16_t containerPort = 0;
  Protocol protocol = Protocol::kTcp;
  std::optional<IpAddress> hostIp;  // none: every local address
  friend bool operator==(const PortMapping&, const PortMapping&) = default;
};

/// The pod end of an attachment's forwards: its first address of each family on the interface,
/// and who is masqueraded on the way to it.
struct PodTarget {
  std::optional<IpPrefix> v4;
  std::optional<IpPrefix> v6;
  bool snat = true;          // hairpin + localhost masquerade, route_localnet
  bool masqAll = false;      // masquerade every forwarded connection
  std::string conditionsV4;  // validated nft match text (validateConditions), or empty
  std::string conditionsV6;
};

struct AttachmentPlan {
  AttachmentRules rules;
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
                                      const PodTarget& pod);

/// The pod subnets `target`'s forwards may need in the shared set: the networks of its addresses
/// when its snat masquerade tests sources against them (snat without masqAll). A plan holds those
/// of the families its mappings use.
std::vector<IpPrefix> podSubnetsOf(const PodTarget& target);

/// kInvalidArgument when the plan was given mappings and forwards none of them (the pod has no
/// address of any of their families): ports granted and forwarded nowhere. An attachment being
/// added or checked calls it; removal and repair plan leases as they are.
Result<void> requireForwards(const AttachmentPlan& plan);

/// The UDP host ports among `forwards`, each once.
std::vector<uint16_t> udpHostPorts(const std::vector<Forward>& forwards);

}  // namespace hostport::nft
