#include "tests/support/nft_state.h"

#include <algorithm>
#include <iterator>
#include <set>

namespace hostport::test {

std::ostream& operator<<(std::ostream& os, const NftEntry& entry) {
  os << entry.family << " " << entry.set << " { " << entry.key;
  if (!entry.comment.empty()) os << " comment \"" << entry.comment << "\"";
  if (!entry.value.empty()) os << " : " << entry.value;
  return os << " }";
}

std::string renderNftExpression(const nlohmann::json& expression) {
  if (expression.is_string()) return expression.get<std::string>();
  if (expression.is_number_integer()) return std::to_string(expression.get<long long>());
  if (expression.is_object()) {
    if (expression.contains("concat")) {
      std::string text;
      for (const auto& part : expression["concat"]) {
        text += (text.empty() ? "" : " . ") + renderNftExpression(part);
      }
      return text;
    }
    if (expression.contains("prefix")) {
      const auto& prefix = expression["prefix"];
      return renderNftExpression(prefix.value("addr", nlohmann::json())) + "/" +
             std::to_string(prefix.value("len", -1));
    }
    if (expression.contains("range") && expression["range"].size() == 2) {
      return renderNftExpression(expression["range"][0]) + "-" +
             renderNftExpression(expression["range"][1]);
    }
    if (expression.contains("elem")) return renderNftExpression(expression["elem"]["val"]);
  }
  return expression.dump();
}

namespace {

// One element of a set ("elem" list item) or map ([key, value] pair).
NftEntry entryOf(const std::string& family, const std::string& set, const nlohmann::json& item) {
  NftEntry entry{.family = family, .set = set};
  nlohmann::json key = item;
  if (item.is_array() && item.size() == 2) {
    key = item[0];
    entry.value = renderNftExpression(item[1]);
  }
  if (key.is_object() && key.contains("elem")) {
    entry.comment = key["elem"].value("comment", "");
    key = key["elem"]["val"];
  }
  entry.key = renderNftExpression(key);
  return entry;
}

}  // namespace

Result<nlohmann::json> listHostportTable(const Netns& node, const std::string& family) {
  // Probe with a plain listing of table names first: "list table" of a missing table is an
  // error we must not confuse with nft failing.
  HOSTPORT_TRY(const std::string tables, node.exec({"nft", "-j", "list", "tables", family}));
  auto names = nlohmann::json::parse(tables, nullptr, false);
  bool present = false;
  if (names.is_object() && names.contains("nftables")) {
    for (const auto& item : names["nftables"]) {
      if (item.contains("table") && item["table"].value("name", "") == kTableName) present = true;
    }
  }
  if (!present) return nlohmann::json();
  HOSTPORT_TRY(const std::string text,
               node.exec({"nft", "-j", "list", "table", family, kTableName}));
  auto json = nlohmann::json::parse(text, nullptr, false);
  if (json.is_discarded()) return fail(ErrorCode::kDecode, "nft -j output is not JSON: " + text);
  return json;
}

Result<std::vector<NftEntry>> hostportEntries(const Netns& node) {
  std::vector<NftEntry> entries;
  for (const std::string family : {"ip", "ip6"}) {
    HOSTPORT_TRY(const nlohmann::json table, listHostportTable(node, family));
    if (table.is_null()) continue;
    for (const auto& item : table["nftables"]) {
      for (const char* kind : {"map", "set"}) {
        if (!item.contains(kind)) continue;
        const auto& set = item[kind];
        if (!set.contains("elem")) continue;
        for (const auto& element : set["elem"]) {
          entries.push_back(entryOf(family, set.value("name", ""), element));
        }
      }
      if (item.contains("rule") && item["rule"].contains("comment")) {
        const auto& rule = item["rule"];
        entries.push_back(NftEntry{.family = family,
                                   .set = "chain " + rule.value("chain", ""),
                                   .key = rule.value("expr", nlohmann::json::array()).dump(),
                                   .comment = rule.value("comment", "")});
      }
    }
  }
  std::sort(entries.begin(), entries.end());
  return entries;
}

std::vector<NftEntry> ownedBy(const std::vector<NftEntry>& entries, const std::string& owner) {
  std::vector<NftEntry> owned;
  std::copy_if(entries.begin(), entries.end(), std::back_inserter(owned),
               [&](const NftEntry& entry) { return entry.comment == owner; });
  return owned;
}

std::vector<NftEntry> withoutPodSubnets(const std::vector<NftEntry>& entries) {
  std::vector<NftEntry> kept;
  std::copy_if(entries.begin(), entries.end(), std::back_inserter(kept),
               [](const NftEntry& entry) { return entry.set != "podnets"; });
  return kept;
}

Result<std::string> rulesetJson(const Netns& node) {
  return node.exec({"nft", "-j", "list", "ruleset"});
}

namespace {

std::multiset<std::string> rulesetObjects(const std::string& text, bool ignoreHandles) {
  std::multiset<std::string> objects;
  auto json = nlohmann::json::parse(text, nullptr, false);
  if (!json.is_object() || !json.contains("nftables")) {
    objects.insert("<not nft JSON: " + text + ">");
    return objects;
  }
  for (auto item : json["nftables"]) {
    if (item.contains("metainfo")) continue;
    if (ignoreHandles) {
      for (auto& [kind, body] : item.items()) {
        if (body.is_object()) body.erase("handle");
      }
    }
    objects.insert(item.dump());
  }
  return objects;
}

}  // namespace

std::string rulesetDifference(const std::string& before, const std::string& after,
                              bool ignoreHandles) {
  const auto old = rulesetObjects(before, ignoreHandles);
  const auto now = rulesetObjects(after, ignoreHandles);
  std::vector<std::string> gone;
  std::vector<std::string> added;
  std::set_difference(old.begin(), old.end(), now.begin(), now.end(), std::back_inserter(gone));
  std::set_difference(now.begin(), now.end(), old.begin(), old.end(), std::back_inserter(added));
  std::string text;
  for (const auto& item : gone) text += "- " + item + "\n";
  for (const auto& item : added) text += "+ " + item + "\n";
  return text;
}

Result<void> deleteElement(const Netns& node, const NftEntry& entry) {
  HOSTPORT_TRY_VOID(node.exec(
      {"nft", "delete", "element", entry.family, kTableName, entry.set, "{ " + entry.key + " }"}));
  return {};
}

}  // namespace hostport::test
