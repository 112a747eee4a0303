#pragma once
// The typed vocabulary of what one attachment owns in our nftables tables. Every value here is
// validated on construction, so the command builder can print it without escaping.

#include <algorithm>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "common/error.h"
#include "common/ip_address.h"
#include "common/protocol.h"

namespace hostport::nft {

/// One DNAT: traffic for (hostIp or any local address, protocol, hostPort) goes to
/// containerIp:containerPort. Forwards without conditions live in the O(1) maps; forwards with
/// conditions become one rule each in the `conditional` chain.
struct Forward {
  Protocol protocol = Protocol::kTcp;
  std::optional<IpAddress> hostIp;  // none: every local address
  uint16_t hostPort = 0;
  IpAddress containerIp;
  uint16_t containerPort = 0;
  std::string conditions;  // validated nft match text, or empty

  Family family() const { return containerIp.family(); }
  friend bool operator==(const Forward&, const Forward&) = default;
};

/// Who is masqueraded after DNAT toward podIp; one element of the masquerade sets
/// (table_layout.h), keyed by the pod address alone, so adding and deleting it costs the same at
/// any number of pods.
enum class MasqueradeScope : uint8_t {
  kPodSubnet,    // snat: sources in the pod's own subnet (hairpin, same-bridge peers) and, for
                 // IPv4, localhost; the subnet is one of AttachmentRules::podSubnets
  kEverySource,  // masqAll
};

struct Masquerade {
  IpAddress podIp;
  MasqueradeScope scope = MasqueradeScope::kPodSubnet;

  Family family() const { return podIp.family(); }
  friend bool operator==(const Masquerade&, const Masquerade&) = default;
};

// A forward read back from a rule of the conditional chain carries one of these as its
// `conditions`, never the text it was written with: the user's matches are nft's to read, and we
// never interpret them (table_state.h).
/// Our own part of the rule read back: the forward is known, its conditions are not.
inline constexpr std::string_view kInstalledConditionsMarker = "(conditions)";
/// A rule whose own part did not read back as one we write (someone else's rule under an owner
/// tag), or one not read at all (Ruleset::readElements): only its owner, family and handle are
/// known. It matches no planned forward, so it is removed like any unexpected one.
inline constexpr std::string_view kUnidentifiedRuleMarker = "(unidentified rule)";

/// An unidentified rule of `family` (kUnidentifiedRuleMarker), and the test for one.
Forward unidentifiedRule(Family family);
inline bool isUnidentifiedRule(const Forward& forward) {
  return forward.conditions == kUnidentifiedRuleMarker;
}

/// Everything one attachment owns; `owner` tags each element and rule.
struct AttachmentRules {
  std::string owner;
  std::vector<Forward> forwards;
  std::vector<Masquerade> masquerades;
  /// The networks of the pod's addresses (10.88.0.0/16) that its kPodSubnet masquerades test
  /// sources against. Shared by every attachment in the subnet and owned by none: installing adds
  /// them (an existing one is left as it is), removing an attachment leaves them, and the agent's
  /// reconciler deletes those no lease needs any more.
  std::vector<IpPrefix> podSubnets;

  bool empty() const { return forwards.empty() && masquerades.empty(); }
  /// True when a forward has conditions: it is a rule of the conditional chain, not an element,
  /// and only an nft listing shows it.
  bool hasConditions() const {
    return std::ranges::any_of(forwards,
                               [](const Forward& forward) { return !forward.conditions.empty(); });
  }
};

/// "containerID/ifname", validated so it is safe inside an nft comment (and short enough).
Result<std::string> makeOwner(std::string_view containerId, std::string_view ifname);

/// True when `text` is what makeOwner() makes: the tag of an element we wrote. Elements and
/// rules whose comment is anything else are someone else's and are never touched.
bool isOwnerTag(std::string_view text);

/// Joins portmap-style condition strings and checks them against a strict token grammar, so
/// they can only add matches to our rule and never end it or start another command.
Result<std::string> validateConditions(const std::vector<std::string>& parts);

/// "tcp 0.0.0.0:8080 -> 10.88.0.5:80"; "an unidentified ip rule in chain conditional".
std::string describe(const Forward& forward);
std::string describe(const Masquerade& masquerade);  // "10.88.0.5 (pod subnet)"

}  // namespace hostport::nft
