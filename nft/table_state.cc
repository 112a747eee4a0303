#include "nft/table_state.h"

#include <algorithm>

#include "nft/table_layout.h"

namespace hostport::nft {
namespace {

using nlohmann::json;

Result<void> shapeError(std::string_view what, const json& value) {
  return fail(ErrorCode::kKernel, "unexpected " + std::string(what) +
                                      " in nft listing: " + value.dump().substr(0, 200));
}

struct ElementParts {
  json value;
  std::string comment;
};

/// An element is either the bare value or {"elem": {"val": value, "comment": ...}}.
ElementParts unwrapElement(const json& element) {
  if (element.is_object() && element.contains("elem") && element["elem"].is_object()) {
    const auto& inner = element["elem"];
    std::string comment;
    if (inner.contains("comment") && inner["comment"].is_string()) comment = inner["comment"];
    return {inner.value("val", json()), comment};
  }
  return {element, {}};
}

const json* concatItems(const json& value, std::size_t expected) {
  if (!value.is_object() || !value.contains("concat")) return nullptr;
  const auto& items = value["concat"];
  return items.is_array() && items.size() == expected ? &items : nullptr;
}

/// nft lists a protocol by name, or by number when it has no name for it.
std::optional<Protocol> protocolOf(const json& value) {
  if (value.is_string()) {
    auto parsed = parseProtocol(value.get<std::string>());
    return parsed ? std::optional(*parsed) : std::nullopt;
  }
  if (value.is_number_integer()) {
    const auto number = value.get<int64_t>();
    if (number < 0 || number > 255) return std::nullopt;
    return fromIpProtocolNumber(static_cast<uint8_t>(number));
  }
  return std::nullopt;
}

std::optional<uint16_t> portOf(const json& value) {
  if (!value.is_number_integer()) return std::nullopt;
  const auto port = value.get<int64_t>();
  if (port < 0 || port > 65535) return std::nullopt;
  return static_cast<uint16_t>(port);
}

std::optional<IpAddress> addressOf(const json& value) {
  if (!value.is_string()) return std::nullopt;
  auto parsed = IpAddress::parse(value.get<std::string>());
  return parsed ? std::optional(*parsed) : std::nullopt;
}

/// A masquerade source: a prefix object, or a bare address when the prefix is a single host.
std::optional<IpPrefix> prefixOf(const json& value) {
  if (value.is_string()) {
    auto address = addressOf(value);
    if (!address) return std::nullopt;
    return IpPrefix{*address, address->family() == Family::kIPv4 ? 32 : 128};
  }
  if (value.is_object() && value.contains("prefix") && value["prefix"].is_object()) {
    const auto& prefix = value["prefix"];
    auto address = addressOf(prefix.value("addr", json()));
    const auto length = prefix.value("len", json());
    if (!address || !length.is_number_integer()) return std::nullopt;
    return IpPrefix{*address, length.get<int>()};
  }
  return std::nullopt;
}

Result<void> parseMapElements(const json& map, bool keyedByHostIp, TableState& state) {
  if (!map.contains("elem")) return {};
  for (const auto& pair : map["elem"]) {
    if (!pair.is_array() || pair.size() != 2) return shapeError("map element", pair);
    const auto [key, owner] = unwrapElement(pair[0]);
    const json* keyItems = concatItems(key, keyedByHostIp ? 3 : 2);
    const json* dataItems = concatItems(pair[1], 2);
    if (keyItems == nullptr || dataItems == nullptr) return shapeError("map element", pair);
    const std::size_t first = keyedByHostIp ? 1 : 0;
    auto protocol = protocolOf((*keyItems)[first]);
    auto hostPort = portOf((*keyItems)[first + 1]);
    auto containerIp = addressOf((*dataItems)[0]);
    auto containerPort = portOf((*dataItems)[1]);
    std::optional<IpAddress> hostIp;
    if (keyedByHostIp) hostIp = addressOf((*keyItems)[0]);
    if (!protocol || !hostPort || !containerIp || !containerPort || (keyedByHostIp && !hostIp)) {
      return shapeError("map element", pair);
    }
    Forward forward{*protocol, hostIp, *hostPort, *containerIp, *containerPort, {}};
    state.forwards.push_back({owner, std::move(forward), std::nullopt});
  }
  return {};
}

Result<void> parseMasqueradeElements(const json& set, MasqueradeScope scope, TableState& state) {
  if (!set.contains("elem")) return {};
  for (const auto& element : set["elem"]) {
    const auto [value, owner] = unwrapElement(element);
    auto podIp = addressOf(value);
    if (!podIp) return shapeError("masquerade element", element);
    state.masquerades.push_back({owner, Masquerade{*podIp, scope}});
  }
  return {};
}

Result<void> parsePodSubnetElements(const json& set, TableState& state) {
  if (!set.contains("elem")) return {};
  for (const auto& element : set["elem"]) {
    const ElementParts parts = unwrapElement(element);
    const json* items = concatItems(parts.value, 2);
    if (items == nullptr) return shapeError("pod subnet element", element);
    auto source = prefixOf((*items)[0]);
    auto destination = prefixOf((*items)[1]);
    if (!source || source != destination) return shapeError("pod subnet element", element);
    state.podSubnets.push_back(*source);
  }
  return {};
}

/// The match object of `expr` when it is `<payload field> == value`, else null.
const json* equalityOnPayload(const json& expr, std::string_view field) {
  if (!expr.is_object() || !expr.contains("match") || !expr["match"].is_object()) return nullptr;
  const auto& match = expr["match"];
  const auto& left = match.value("left", json());
  if (match.value("op", json()) != "==" || !left.is_object() || !left.contains("payload") ||
      !left["payload"].is_object() || left["payload"].value("field", json()) != field) {
    return nullptr;
  }
  return &match;
}

std::optional<Family> familyOf(const json& value) {
  if (value == nftFamily(Family::kIPv4)) return Family::kIPv4;
  if (value == nftFamily(Family::kIPv6)) return Family::kIPv6;
  return std::nullopt;
}

/// Our own part of a rule that conditionalRule() in commands.cc wrote, read from the rule's end:
/// `P dport N [ip daddr H] dnat to C:CP` (nft lists our `meta l4proto P th dport N` as
/// `P dport N`, whatever comes before it). Only these last expressions are read: everything
/// before them is the user's conditions, which may hold any match (a range, a set, their own
/// `ip daddr`) and are never interpreted. nullopt when the rule does not end that way.
std::optional<Forward> readOwnPart(const json& expressions, Family family) {
  if (!expressions.is_array() || expressions.size() < 2) return std::nullopt;
  std::size_t at = expressions.size() - 1;
  const json& last = expressions[at];
  if (!last.is_object() || !last.contains("dnat") || !last["dnat"].is_object()) {
    return std::nullopt;
  }
  Forward forward;
  forward.conditions = std::string(kInstalledConditionsMarker);
  const auto containerIp = addressOf(last["dnat"].value("addr", json()));
  const auto containerPort = portOf(last["dnat"].value("port", json()));
  if (!containerIp || !containerPort || containerIp->family() != family) return std::nullopt;
  forward.containerIp = *containerIp;
  forward.containerPort = *containerPort;
  if (const json* match = equalityOnPayload(expressions[--at], "daddr")) {
    const auto hostIp = addressOf(match->value("right", json()));
    if (!hostIp || hostIp->family() != family || at == 0 ||
        (*match)["left"]["payload"].value("protocol", json()) != nftFamily(family)) {
      return std::nullopt;
    }
    forward.hostIp = *hostIp;
    --at;
  }
  const json* match = equalityOnPayload(expressions[at], "dport");
  if (match == nullptr) return std::nullopt;
  const auto protocol = protocolOf((*match)["left"]["payload"].value("protocol", json()));
  const auto hostPort = portOf(match->value("right", json()));
  if (!protocol || !hostPort) return std::nullopt;
  forward.protocol = *protocol;
  forward.hostPort = *hostPort;
  return forward;
}

/// Every rule of the conditional chain is kept, with its owner tag and handle, whatever its
/// expressions hold: one whose own part does not read back is an unidentified rule (removed
/// like any forward nobody planned), never an error that would make the whole listing, and with
/// it every owner's DEL, fail.
Result<void> parseConditionalRule(const json& rule, TableState& state) {
  const auto handle = rule.value("handle", json());
  const auto family = familyOf(rule.value("family", json()));
  if (!handle.is_number_unsigned() || !family) return shapeError("conditional rule", rule);
  const auto& comment = rule.value("comment", json());
  std::optional<Forward> forward = readOwnPart(rule.value("expr", json()), *family);
  state.forwards.push_back({comment.is_string() ? comment.get<std::string>() : std::string(),
                            forward ? std::move(*forward) : unidentifiedRule(*family),
                            handle.get<uint64_t>()});
  return {};
}

}  // namespace

Result<void> parseTableListing(const json& listing, TableState& state) {
  if (!listing.is_object() || !listing.contains("nftables") || !listing["nftables"].is_array()) {
    return shapeError("document", listing);
  }
  for (const auto& entry : listing["nftables"]) {
    Result<void> parsed;
    if (entry.contains("map")) {
      const auto& map = entry["map"];
      const auto name = map.value("name", "");
      if (name == kPortsMap || name == kHostIpPortsMap) {
        parsed = parseMapElements(map, name == kHostIpPortsMap, state);
      }
    } else if (entry.contains("set")) {
      const auto& set = entry["set"];
      const auto name = set.value("name", "");
      if (name == kSnatPodsSet)
        parsed = parseMasqueradeElements(set, MasqueradeScope::kPodSubnet, state);
      if (name == kMasqAllSet)
        parsed = parseMasqueradeElements(set, MasqueradeScope::kEverySource, state);
      if (name == kPodSubnetsSet) parsed = parsePodSubnetElements(set, state);
    } else if (entry.contains("rule") && entry["rule"].value("chain", "") == kConditionalChain) {
      parsed = parseConditionalRule(entry["rule"], state);
    }
    HOSTPORT_TRY_VOID(parsed);
  }
  return {};
}

TableState TableState::ownedBy(const std::string& owner) const {
  TableState owned;
  for (const auto& forward : forwards) {
    if (forward.owner == owner) owned.forwards.push_back(forward);
  }
  for (const auto& masquerade : masquerades) {
    if (masquerade.owner == owner) owned.masquerades.push_back(masquerade);
  }
  owned.podSubnets = podSubnets;
  return owned;
}

AttachmentRules TableState::rulesOf(const std::string& owner) const {
  AttachmentRules rules{owner, {}, {}, {}};
  for (const auto& forward : forwards) {
    if (forward.owner == owner) rules.forwards.push_back(forward.forward);
  }
  for (const auto& masquerade : masquerades) {
    if (masquerade.owner == owner) rules.masquerades.push_back(masquerade.masquerade);
  }
  return rules;
}

bool matchesInstalled(const Forward& expected, const Forward& installed) {
  return !isUnidentifiedRule(installed) && expected.protocol == installed.protocol &&
         expected.hostIp == installed.hostIp && expected.hostPort == installed.hostPort &&
         expected.containerIp == installed.containerIp &&
         expected.containerPort == installed.containerPort &&
         expected.conditions.empty() == installed.conditions.empty();
}

RulesDiff diff(const AttachmentRules& planned, const AttachmentRules& installed) {
  RulesDiff found;
  const auto installedHas = [&](const Forward& expected) {
    return std::ranges::any_of(
        installed.forwards, [&](const Forward& have) { return matchesInstalled(expected, have); });
  };
  const auto plannedHas = [&](const Forward& have) {
    return std::ranges::any_of(planned.forwards, [&](const Forward& expected) {
      return matchesInstalled(expected, have);
    });
  };
  for (const auto& expected : planned.forwards) {
    if (!installedHas(expected)) found.missingForwards.push_back(expected);
  }
  for (const auto& have : installed.forwards) {
    if (!plannedHas(have)) found.unexpectedForwards.push_back(have);
  }
  for (const auto& expected : planned.masquerades) {
    if (std::ranges::find(installed.masquerades, expected) == installed.masquerades.end()) {
      found.missingMasquerades.push_back(expected);
    }
  }
  for (const auto& have : installed.masquerades) {
    if (std::ranges::find(planned.masquerades, have) == planned.masquerades.end()) {
      found.unexpectedMasquerades.push_back(have);
    }
  }
  for (const auto& expected : planned.podSubnets) {
    if (std::ranges::none_of(installed.podSubnets,
                             [&](const IpPrefix& have) { return have.overlaps(expected); })) {
      found.missingPodSubnets.push_back(expected);
    }
  }
  return found;
}

std::string RulesDiff::describeFirstMissing() const {
  if (!missingForwards.empty()) return "forward " + describe(missingForwards.front());
  if (!missingMasquerades.empty()) return "masquerade " + describe(missingMasquerades.front());
  if (!missingPodSubnets.empty()) return "pod subnet " + missingPodSubnets.front().str();
  return {};
}

}  // namespace hostport::nft
