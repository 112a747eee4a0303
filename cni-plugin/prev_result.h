#pragma once

#include <nlohmann/json.hpp>
#include <optional>
#include <span>
#include <string_view>
#include <vector>

#include "common/error.h"
#include "common/ip_address.h"

namespace hostport::cni {

/// The container's first address of each family on the attachment's interface.
struct ContainerAddresses {
  std::optional<IpPrefix> v4;
  std::optional<IpPrefix> v6;
  bool empty() const { return !v4 && !v6; }
};

/// Picks the container's addresses from prevResult.ips as portmap does: an ip whose "interface"
/// index points at an interface not named `ifname`, or one without a "sandbox", is skipped; an ip
/// without "interface" is taken. kInvalidArgument naming the field for a malformed ips array or
/// address, and for a picked address no pod can have (podAddressProblem, common/pod_address.h).
Result<ContainerAddresses> containerAddresses(const nlohmann::json& prevResult,
                                              std::string_view ifname);
/// The same from `addresses`, which must be resultAddresses(prevResult): ADD reads them once for
/// this and for convertResult.
Result<ContainerAddresses> containerAddresses(const nlohmann::json& prevResult,
                                              std::span<const IpPrefix> addresses,
                                              std::string_view ifname);

/// kInvalidArgument naming the interface when `addresses` is empty: an attachment that asks for
/// ports must have an address to forward them to.
Result<void> requireContainerAddress(const ContainerAddresses& addresses, std::string_view ifname);

/// Every prevResult.ips[].address ("10.88.0.5/16") in order; none when "ips" is absent or null.
/// kInvalidArgument naming the field for a malformed ips array or an address that is not a CIDR.
Result<std::vector<IpPrefix>> resultAddresses(const nlohmann::json& prevResult);

}  // namespace hostport::cni
