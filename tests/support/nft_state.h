#pragma once
// Reads the plugin's nftables state inside a node netns through `nft -j` (the text listing does
// not escape comments), flattened into comparable entries.

#include <nlohmann/json.hpp>
#include <ostream>
#include <string>
#include <vector>

#include "common/error.h"
#include "tests/support/netns.h"

namespace hostport::test {

/// One map/set element, or one commented rule, of a `hostport` table.
struct NftEntry {
  std::string family;  // "ip" or "ip6"
  std::string set;     // "ports", "ipports", "masq", ... or "chain <name>" for a rule
  std::string key;    // nft syntax: "tcp . 8080", "192.0.2.1 . udp . 53", "127.0.0.0/8 . 10.88.0.2"
  std::string value;  // a map's data: "10.88.0.2 . 80"; empty for sets and rules
  std::string comment;  // the owner, "containerID/ifname"

  friend bool operator==(const NftEntry&, const NftEntry&) = default;
  friend auto operator<=>(const NftEntry&, const NftEntry&) = default;
};
std::ostream& operator<<(std::ostream& os, const NftEntry& entry);

inline constexpr const char* kTableName = "hostport";

/// Every element of every map and set, and every rule that has a comment, in `table ip hostport`
/// and `table ip6 hostport` of the netns, sorted. A missing table contributes nothing.
Result<std::vector<NftEntry>> hostportEntries(const Netns& node);

/// The entries whose comment is `owner`.
std::vector<NftEntry> ownedBy(const std::vector<NftEntry>& entries, const std::string& owner);
/// The entries but the pod subnets, which the pods in a subnet share (a DEL leaves them; the
/// agent's reconciler removes one once no lease is in it).
std::vector<NftEntry> withoutPodSubnets(const std::vector<NftEntry>& entries);

/// `nft -j list ruleset` of the netns, as text (handles included), for before/after comparison.
Result<std::string> rulesetJson(const Netns& node);

/// The difference between two `nft -j list ruleset` outputs, one top-level object per line:
/// "- <only before>" and "+ <only after>". Empty when they are the same. With `ignoreHandles`,
/// objects that were only re-created (new handle, same content) count as the same.
std::string rulesetDifference(const std::string& before, const std::string& after,
                              bool ignoreHandles = false);

/// `nft -j list table <family> hostport`; a null json when the table does not exist.
Result<nlohmann::json> listHostportTable(const Netns& node, const std::string& family);

/// Deletes one element by hand: `nft delete element <family> hostport <set> { <key> }`.
Result<void> deleteElement(const Netns& node, const NftEntry& entry);

/// Renders an nft JSON expression (concat, prefix, range, literal) in nft syntax.
std::string renderNftExpression(const nlohmann::json& expression);

}  // namespace hostport::test
