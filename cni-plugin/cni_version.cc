#include "cni-plugin/cni_version.h"

#include <algorithm>
#include <charconv>

#include "cni-plugin/prev_result.h"
#include "common/json_fields.h"

// A chained plugin passes prevResult on, so the only shape difference that matters between the
// versions we speak is ips[].version: required before 1.0.0, removed in 1.0.0. Everything else
// (interfaces, routes, dns) has kept its shape and is copied untouched.

namespace hostport::cni {
namespace {

using nlohmann::json;

/// The next dotted component as a number; a malformed component counts as 0.
uint64_t takeComponent(std::string_view& version) {
  const size_t dot = std::min(version.find('.'), version.size());
  uint64_t value = 0;
  std::from_chars(version.data(), version.data() + dot, value);
  version.remove_prefix(std::min(dot + 1, version.size()));
  return value;
}

std::string supportedList() {
  std::string list;
  for (const auto& version : supportedVersions()) {
    list += (list.empty() ? "" : ", ") + version;
  }
  return list;
}

/// The version is checked before the result, so an unknown version is the error a runtime sees.
Result<void> checkSupported(std::string_view version) {
  if (isSupported(version)) return {};
  return invalidValue("cniVersion", std::string(version),
                      "is not supported (supported: " + supportedList() + ")",
                      ErrorCode::kIncompatibleVersion);
}

}  // namespace

const std::vector<std::string>& supportedVersions() {
  static const std::vector<std::string> versions{"0.3.0", "0.3.1", "0.4.0", "1.0.0", "1.1.0"};
  return versions;
}

bool isSupported(std::string_view version) {
  return std::ranges::find(supportedVersions(), version) != supportedVersions().end();
}

int compareVersions(std::string_view a, std::string_view b) {
  while (!a.empty() || !b.empty()) {
    const uint64_t left = takeComponent(a);
    const uint64_t right = takeComponent(b);
    if (left != right) return left < right ? -1 : 1;
  }
  return 0;
}

Result<json> convertResult(const json& result, std::string_view version) {
  HOSTPORT_TRY_VOID(checkSupported(version));
  HOSTPORT_TRY(const std::vector<IpPrefix> addresses, resultAddresses(result));
  return convertResult(result, addresses, version);
}

Result<json> convertResult(const json& result, std::span<const IpPrefix> addresses,
                           std::string_view version) {
  HOSTPORT_TRY_VOID(checkSupported(version));
  json converted = result;
  const bool carriesIpVersion = compareVersions(version, "1.0.0") < 0;
  for (size_t i = 0; i < addresses.size(); ++i) {
    json& ip = converted["ips"][i];
    if (!carriesIpVersion) {
      ip.erase("version");
    } else if (!ip.contains("version") || ip["version"].is_null()) {
      ip["version"] = addresses[i].address.family() == Family::kIPv4 ? "4" : "6";
    }
  }
  converted["cniVersion"] = version;
  return converted;
}

}  // namespace hostport::cni
