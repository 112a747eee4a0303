#pragma once
// The CNI spec versions we speak, and the conversion of a result between them.

#include <nlohmann/json.hpp>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "common/error.h"
#include "common/ip_address.h"

namespace hostport::cni {

/// "0.3.0", "0.3.1", "0.4.0", "1.0.0", "1.1.0".
const std::vector<std::string>& supportedVersions();
bool isSupported(std::string_view version);
/// Orders dotted versions numerically; only meaningful for well-formed versions.
int compareVersions(std::string_view a, std::string_view b);

/// Converts a result (prevResult) to `version`'s shape and sets its "cniVersion":
/// 0.3.x/0.4.0 carry ips[].version ("4"/"6", derived from the address when missing),
/// 1.x has none. Every other field is kept as it is. kIncompatibleVersion for an unknown version;
/// kInvalidArgument naming the field when ips[].address is not a CIDR.
Result<nlohmann::json> convertResult(const nlohmann::json& result, std::string_view version);
/// The same with `addresses`, which must be resultAddresses(result) (prev_result.h): ADD has read
/// them already to pick the container's addresses.
Result<nlohmann::json> convertResult(const nlohmann::json& result,
                                     std::span<const IpPrefix> addresses, std::string_view version);

}  // namespace hostport::cni
