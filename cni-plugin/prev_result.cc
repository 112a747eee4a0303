#include "cni-plugin/prev_result.h"

#include <cassert>
#include <cstdint>
#include <string>

#include "common/json_fields.h"
#include "common/pod_address.h"

// The previous plugin's result is trusted no more than the rest of stdin: a chained plugin may
// report the host-side veth, other attachments or garbage, and only the container's own
// interface may become a DNAT target, with an address a pod can have (common/pod_address.h).

namespace hostport::cni {
namespace {

using nlohmann::json;

constexpr std::string_view kIps = "prevResult.ips";

/// "ips" and "interfaces" are both optional arrays, bounded only by the size of stdin.
Result<const json*> optionalArray(const json& prevResult, std::string_view key) {
  if (!prevResult.is_object()) return invalidValue("prevResult", prevResult, "must be an object");
  return readArrayOrEmpty(jsonField(prevResult, "prevResult", key), SIZE_MAX);
}

Result<IpPrefix> parseAddress(const json& ip, size_t index) {
  const std::string path = elementPath(kIps, index);
  if (!ip.is_object()) return invalidValue(path, ip, "must be an object");
  const JsonField field = jsonField(ip, path, "address");
  HOSTPORT_TRY(const std::string text, readString(field));
  auto prefix = IpPrefix::parse(text);
  if (!prefix) return invalidValue(field, "is not a CIDR such as \"10.88.0.5/16\"");
  return *prefix;
}

/// Whether ips[index] belongs to the container side of `ifname`. Go's portmap takes an ip whose
/// index is out of range; we skip it, since nothing then proves it is the container's.
Result<bool> isOnContainerInterface(const json& ip, size_t index, const json& interfaces,
                                    std::string_view ifname) {
  const JsonField interfaceIndex = jsonField(ip, elementPath(kIps, index), "interface");
  if (interfaceIndex.value == nullptr) return true;
  if (!interfaceIndex.value->is_number_integer()) {
    return invalidValue(interfaceIndex, "must be an integer");
  }
  const auto position = interfaceIndex.value->get<int64_t>();
  if (position < 0 || static_cast<uint64_t>(position) >= interfaces.size()) return false;
  const json& interface = interfaces[static_cast<size_t>(position)];
  const std::string path = elementPath("prevResult.interfaces", static_cast<size_t>(position));
  if (!interface.is_object()) return invalidValue(path, interface, "must be an object");
  const JsonField name = jsonField(interface, path, "name");
  HOSTPORT_TRY(const std::string nameText, readString(name, ""));
  HOSTPORT_TRY(const std::string sandbox, readString(jsonField(interface, path, "sandbox"), ""));
  // The host side of a veth has no sandbox: DNAT to it would reach the node, not the pod.
  return name.value != nullptr && nameText == ifname && !sandbox.empty();
}

}  // namespace

Result<std::vector<IpPrefix>> resultAddresses(const json& prevResult) {
  HOSTPORT_TRY(const json* ips, optionalArray(prevResult, "ips"));
  std::vector<IpPrefix> addresses;
  addresses.reserve(ips->size());
  for (size_t i = 0; i < ips->size(); ++i) {
    HOSTPORT_TRY(IpPrefix address, parseAddress((*ips)[i], i));
    addresses.push_back(std::move(address));
  }
  return addresses;
}

Result<ContainerAddresses> containerAddresses(const json& prevResult, std::string_view ifname) {
  HOSTPORT_TRY(const std::vector<IpPrefix> addresses, resultAddresses(prevResult));
  return containerAddresses(prevResult, addresses, ifname);
}

Result<ContainerAddresses> containerAddresses(const json& prevResult,
                                              std::span<const IpPrefix> addresses,
                                              std::string_view ifname) {
  HOSTPORT_TRY(const json* interfaces, optionalArray(prevResult, "interfaces"));
  const json* ips = *optionalArray(prevResult, "ips");  // checked by resultAddresses
  assert(ips->size() == addresses.size() && "addresses are not resultAddresses(prevResult)");

  ContainerAddresses result;
  for (size_t i = 0; i < addresses.size(); ++i) {
    HOSTPORT_TRY(const bool onContainer, isOnContainerInterface((*ips)[i], i, *interfaces, ifname));
    if (!onContainer) continue;
    const IpPrefix& address = addresses[i];
    auto& slot = address.address.family() == Family::kIPv4 ? result.v4 : result.v6;
    if (slot) continue;  // the first of each family wins, as in portmap
    // Refused, not skipped for the next one: a result that names such an address is broken.
    if (const Problem problem = podAddressProblem(address)) {
      return invalidValue(jsonField((*ips)[i], elementPath(kIps, i), "address"), *problem);
    }
    slot = address;
  }
  return result;
}

Result<void> requireContainerAddress(const ContainerAddresses& addresses, std::string_view ifname) {
  if (!addresses.empty()) return {};
  const std::string name(ifname);
  return fail(ErrorCode::kInvalidArgument,
              "prevResult names no address on interface " + name +
                  " inside the sandbox, so the pod's ports would be forwarded nowhere (an entry "
                  "of prevResult.ips counts when its \"interface\" is the index of a "
                  "prevResult.interfaces entry named " +
                  name + " with a \"sandbox\", or when it has no \"interface\")");
}

}  // namespace hostport::cni
