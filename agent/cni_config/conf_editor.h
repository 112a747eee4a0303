#pragma once
// The one place that decides how a network configuration changes when hostport is chained into
// it and when it is taken out again. Pure: JSON in, JSON out and what changed; no I/O, so each
// primary's shape is a unit test.
//
// Design note: documents are nlohmann::ordered_json, so every entry we do not own keeps its key
// order, and its numbers keep their type (1.0 stays a float, 1 an integer, a uint64 exact). Only
// the `plugins` array is edited: one `hostport` entry is made to exist, at portmap's index when it
// replaces portmap, else where it already was, else at the end.

#include <nlohmann/json.hpp>
#include <optional>
#include <string>

#include "common/error.h"

namespace hostport::agent::cni_config {

using Json = nlohmann::ordered_json;

inline constexpr std::string_view kPluginType = "hostport";
inline constexpr std::string_view kPortmapType = "portmap";

struct ChainOptions {
  /// true: hostport takes portmap's place (and its `snat`); false: portmap stays, and hostport
  /// follows it with `"staticPorts": false`, so no hostPort gets two DNATs.
  bool replacePortmap = true;
  /// Written as `agentSocket` in our entry; empty: the plugin's default, left unwritten.
  std::string agentSocket;
};

/// The entry we add: type, capabilities and, when given, agentSocket.
Json pluginEntry(const ChainOptions& options);

/// A portmap entry taken out of the chain, kept so uninstall can put it back where it was.
struct ReplacedPortmap {
  std::size_t index = 0;
  Json entry;

  bool operator==(const ReplacedPortmap&) const = default;
};

struct ChainEdit {
  Json conflist;  // the document to write (the input when nothing changed)
  bool changed = false;
  /// Set when our entry was missing (the first install, or a primary rewrote the file).
  bool inserted = false;
  std::optional<ReplacedPortmap> replacedPortmap;
};

/// Chains hostport into a conflist (an object with a `plugins` array). kInvalidArgument naming the
/// field when `plugins` is missing or not an array.
Result<ChainEdit> chainIntoConflist(const Json& conflist, const ChainOptions& options);

/// A single-plugin `.conf` as the conflist libcni would make of it (ConfListFromConf): the same
/// `name` and `cniVersion` (libcni caches results by network name), the conf itself as the one
/// plugin. kInvalidArgument when `name` or `type` is missing or not a string.
Result<Json> conflistFromConf(const Json& conf);

/// True when the document has exactly one hostport entry in its plugins.
bool isChained(const Json& conflist);

/// Takes hostport out of a conflist: every hostport entry removed, and `portmap` (when recorded
/// and no portmap is present) put back at its index, or at the end when the list got shorter.
Result<Json> unchainFromConflist(const Json& conflist,
                                 const std::optional<ReplacedPortmap>& portmap);

}  // namespace hostport::agent::cni_config
