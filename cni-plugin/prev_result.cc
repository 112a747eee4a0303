#include "cni-plugin/prev_result.h"

#include <string>

#include "cni-plugin/plugin_config.h"

// The previous plugin's result is trusted no more than the rest of stdin: a chained plugin may
// report the host-side veth, other attachments or garbage, and only the container's own
// interface may become a DNAT target.

namespace hostport::cni {
namespace {

using nlohmann::json;

std::unexpected<Error> invalid(std::string_view field, const json& value,
                               std::string_view problem) {
  return invalidValue(ErrorCode::kInvalidArgument, field, value, problem);
}

std::string ipField(size_t index, std::string_view key) {
  return "prevResult.ips[" + std::to_string(index) + "]." + std::string(key);
}

/// "ips" and "interfaces" are both optional arrays.
Result<const json*> optionalArray(const json& prevResult, std::string_view key) {
  if (!prevResult.is_object()) return invalid("prevResult", prevResult, "must be an object");
  const json* array = optionalMember(prevResult, key);
  if (array != nullptr && !array->is_array()) {
    return invalid("prevResult." + std::string(key), *array, "must be an array");
  }
  return array;
}

Result<IpPrefix> parseAddress(const json& ip, size_t index) {
  const std::string field = ipField(index, "address");
  if (!ip.is_object()) {
    return invalid("prevResult.ips[" + std::to_string(index) + "]", ip, "must be an object");
  }
  const json* address = optionalMember(ip, "address");
  if (address == nullptr) return fail(ErrorCode::kInvalidArgument, field + ": missing");
  if (!address->is_string()) return invalid(field, *address, "must be a string");
  auto prefix = IpPrefix::parse(address->get_ref<const std::string&>());
  if (!prefix) return invalid(field, *address, "is not a CIDR such as \"10.88.0.5/16\"");
  return *prefix;
}

/// Whether ips[index] belongs to the container side of `ifname`. Go's portmap takes an ip whose
/// index is out of range; we skip it, since nothing then proves it is the container's.
Result<bool> isOnContainerInterface(const json& ip, size_t index, const json* interfaces,
                                    std::string_view ifname) {
  const json* interfaceIndex = optionalMember(ip, "interface");
  if (interfaceIndex == nullptr) return true;
  if (!interfaceIndex->is_number_integer()) {
    return invalid(ipField(index, "interface"), *interfaceIndex, "must be an integer");
  }
  const auto position = interfaceIndex->get<int64_t>();
  if (interfaces == nullptr || position < 0 ||
      static_cast<uint64_t>(position) >= interfaces->size()) {
    return false;
  }
  const json& interface = (*interfaces)[static_cast<size_t>(position)];
  const std::string field = "prevResult.interfaces[" + std::to_string(position) + "]";
  if (!interface.is_object()) return invalid(field, interface, "must be an object");
  const json* name = optionalMember(interface, "name");
  const json* sandbox = optionalMember(interface, "sandbox");
  if (name != nullptr && !name->is_string()) {
    return invalid(field + ".name", *name, "must be a string");
  }
  if (sandbox != nullptr && !sandbox->is_string()) {
    return invalid(field + ".sandbox", *sandbox, "must be a string");
  }
  // The host side of a veth has no sandbox: DNAT to it would reach the node, not the pod.
  return name != nullptr && *name == ifname && sandbox != nullptr &&
         !sandbox->get_ref<const std::string&>().empty();
}

}  // namespace

Result<std::vector<IpPrefix>> resultAddresses(const json& prevResult) {
  auto ips = optionalArray(prevResult, "ips");
  if (!ips) return std::unexpected(std::move(ips.error()));
  std::vector<IpPrefix> addresses;
  if (*ips == nullptr) return addresses;
  addresses.reserve((*ips)->size());
  for (size_t i = 0; i < (*ips)->size(); ++i) {
    auto address = parseAddress((**ips)[i], i);
    if (!address) return std::unexpected(std::move(address.error()));
    addresses.push_back(std::move(*address));
  }
  return addresses;
}

Result<ContainerAddresses> containerAddresses(const json& prevResult, std::string_view ifname) {
  auto addresses = resultAddresses(prevResult);
  if (!addresses) return std::unexpected(std::move(addresses.error()));
  auto interfaces = optionalArray(prevResult, "interfaces");
  if (!interfaces) return std::unexpected(std::move(interfaces.error()));
  const json* ips = *optionalArray(prevResult, "ips");  // checked by resultAddresses

  ContainerAddresses result;
  for (size_t i = 0; i < addresses->size(); ++i) {
    auto onContainer = isOnContainerInterface((*ips)[i], i, *interfaces, ifname);
    if (!onContainer) return std::unexpected(std::move(onContainer.error()));
    if (!*onContainer) continue;
    const IpPrefix& address = (*addresses)[i];
    auto& slot = address.address.family() == Family::kIPv4 ? result.v4 : result.v6;
    if (!slot) slot = address;  // the first of each family wins, as in portmap
  }
  return result;
}

}  // namespace hostport::cni
