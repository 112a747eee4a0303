#include "agent/api/pod_codec.h"

#include <algorithm>
#include <charconv>

#include "agent/api/json_codec.h"
#include "agent/api/routes.h"
#include "common/percent_encoding.h"
#include "common/quote.h"

namespace hostport::agent::api {

Result<std::chrono::milliseconds> parseWait(std::string_view text) {
  const auto invalid = [&] {
    return fail(ErrorCode::kInvalidArgument,
                std::string(kWaitParameter) + ": " + quoteText(text) +
                    " is not a duration such as 10s or 500ms (at most " +
                    std::to_string(kMaxPodWait.count()) + "s)");
  };
  std::string_view digits = text;
  uint64_t unitMs = 1000;
  if (digits.ends_with("ms")) {
    digits.remove_suffix(2);
    unitMs = 1;
  } else if (digits.ends_with("s")) {
    digits.remove_suffix(1);
  }
  // Six digits are more than any allowed value in either unit, and keep the product exact.
  if (digits.empty() || digits.size() > 6) return invalid();
  uint64_t value = 0;
  const auto [end, error] = std::from_chars(digits.data(), digits.data() + digits.size(), value);
  if (error != std::errc() || end != digits.data() + digits.size()) return invalid();
  const std::chrono::milliseconds wait(value * unitMs);
  if (wait > kMaxPodWait) return invalid();
  return wait;
}

nlohmann::json selfBody(const std::vector<Lease>& leases) {
  nlohmann::json ports = nlohmann::json::array();
  for (const Lease& lease : leases) {
    for (const PortGrant& grant : lease.ports) ports.push_back(toJson(grant));
  }
  const PodIdentity pod = leases.empty() ? PodIdentity{} : leases.front().pod;
  return {{"namespace", pod.namespaceName}, {"name", pod.name}, {"ports", std::move(ports)}};
}

std::optional<PortGrant> namedPort(const std::vector<Lease>& leases, std::string_view name) {
  for (const Lease& lease : leases) {
    const auto found = std::ranges::find(lease.ports, name, &PortGrant::name);
    if (found != lease.ports.end()) return *found;
  }
  return std::nullopt;
}

std::string portText(const PortGrant& grant) { return grant.hostPorts().str() + "\n"; }

std::string selfTarget(std::string_view portName, std::optional<std::chrono::seconds> wait) {
  std::string target(kSelfPath);
  if (!portName.empty()) target = std::string(kSelfPortsPath) + "/" + percentEncode(portName);
  if (wait) target += "?" + std::string(kWaitParameter) + "=" + std::to_string(wait->count()) + "s";
  return target;
}

}  // namespace hostport::agent::api
