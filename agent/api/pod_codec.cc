#include "agent/api/pod_codec.h"

#include <algorithm>
#include <charconv>
#include <set>

#include "agent/api/json_codec.h"
#include "agent/api/routes.h"
#include "common/ascii.h"
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
  return selfBody(leases.empty() ? PodIdentity{} : leases.front().pod, leases);
}

nlohmann::json selfBody(const PodIdentity& pod, const std::vector<Lease>& leases) {
  nlohmann::json ports = nlohmann::json::array();
  for (const Lease& lease : leases) {
    for (const PortGrant& grant : lease.ports) ports.push_back(toJson(grant));
  }
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

std::string envName(std::string_view name) {
  std::string variable = "HOSTPORT_";
  for (const char c : name) {
    variable += c == '-' ? '_' : ascii::toUpper(c);
  }
  return variable;
}

std::string envText(const std::vector<Lease>& leases) {
  std::string text;
  std::set<std::string_view> written;
  for (const Lease& lease : leases) {
    for (const PortGrant& grant : lease.ports) {
      if (grant.name.empty() || !written.insert(grant.name).second) continue;
      const std::string variable = envName(grant.name);
      const PortRange ports = grant.hostPorts();
      text += variable + "=" + ports.str() + "\n";
      if (grant.count > 1) {
        text += variable + "_FIRST=" + std::to_string(ports.first) + "\n";
        text += variable + "_LAST=" + std::to_string(ports.last) + "\n";
      }
    }
  }
  return text;
}

namespace {

std::string withWait(std::string target, std::optional<std::chrono::seconds> wait) {
  if (wait) target += "?" + std::string(kWaitParameter) + "=" + std::to_string(wait->count()) + "s";
  return target;
}

}  // namespace

std::string selfTarget(std::string_view portName, std::optional<std::chrono::seconds> wait) {
  if (portName.empty()) return withWait(std::string(kSelfPath), wait);
  return withWait(std::string(kSelfPortsPath) + "/" + percentEncode(portName), wait);
}

std::string selfEnvTarget(std::optional<std::chrono::seconds> wait) {
  return withWait(std::string(kSelfEnvPath), wait);
}

}  // namespace hostport::agent::api
