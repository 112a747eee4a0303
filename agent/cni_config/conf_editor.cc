#include "agent/cni_config/conf_editor.h"

#include <algorithm>

namespace hostport::agent::cni_config {
namespace {

bool hasType(const Json& entry, std::string_view type) {
  if (!entry.is_object()) return false;
  const auto it = entry.find("type");
  return it != entry.end() && it->is_string() && it->get_ref<const std::string&>() == type;
}

Result<const Json*> pluginsOf(const Json& conflist) {
  if (!conflist.is_object()) {
    return fail(ErrorCode::kInvalidArgument, "the network configuration is not a JSON object");
  }
  const auto it = conflist.find("plugins");
  if (it == conflist.end() || !it->is_array()) {
    return fail(ErrorCode::kInvalidArgument, "plugins: missing or not an array");
  }
  return &*it;
}

Result<std::string> stringMember(const Json& object, std::string_view key) {
  const auto it = object.find(key);
  if (it == object.end() || !it->is_string()) {
    return fail(ErrorCode::kInvalidArgument, std::string(key) + ": missing or not a string");
  }
  return it->get<std::string>();
}

}  // namespace

Json pluginEntry(const ChainOptions& options) {
  Json entry = Json::object();
  entry["type"] = kPluginType;
  entry["capabilities"] = {{"portMappings", true}, {"io.kubernetes.cri.pod-annotations", true}};
  if (!options.agentSocket.empty()) entry["agentSocket"] = options.agentSocket;
  return entry;
}

Result<ChainEdit> chainIntoConflist(const Json& conflist, const ChainOptions& options) {
  HOSTPORT_TRY(const Json* plugins, pluginsOf(conflist));
  // Ours are taken out first, the first one kept with its options (an operator may have tuned
  // it), so that a list with two of them ends with one.
  Json others = Json::array();
  std::optional<Json> ours;
  std::optional<std::size_t> oursIndex;
  for (const auto& entry : *plugins) {
    if (hasType(entry, kPluginType)) {
      if (!ours) {
        ours = entry;
        oursIndex = others.size();
      }
      continue;
    }
    others.push_back(entry);
  }
  ChainEdit edit;
  edit.inserted = !ours.has_value();
  Json entry = ours.value_or(pluginEntry(options));
  const auto portmap =
      std::ranges::find_if(others, [](const Json& e) { return hasType(e, kPortmapType); });
  std::size_t index = oursIndex.value_or(others.size());
  if (portmap != others.end()) {
    const auto portmapIndex = static_cast<std::size_t>(portmap - others.begin());
    if (options.replacePortmap) {
      // portmap's snat is the operator's choice for hairpin and localhost traffic; ours means the
      // same thing, so it carries over unless our entry already says otherwise.
      if (const auto snat = portmap->find("snat");
          snat != portmap->end() && !entry.contains("snat")) {
        entry["snat"] = *snat;
      }
      entry.erase("staticPorts");  // left from a run with replacePortmap: false
      edit.replacedPortmap = ReplacedPortmap{portmapIndex, *portmap};
      others.erase(portmap);
      index = portmapIndex;
    } else {
      // portmap keeps static hostPorts; we serve the annotation ports only, after it.
      entry["staticPorts"] = false;
      index = oursIndex ? std::max(*oursIndex, portmapIndex + 1) : portmapIndex + 1;
    }
  }
  others.insert(others.begin() + static_cast<std::ptrdiff_t>(std::min(index, others.size())),
                std::move(entry));
  edit.conflist = conflist;
  edit.conflist["plugins"] = std::move(others);
  edit.changed = edit.conflist != conflist;
  return edit;
}

Result<Json> conflistFromConf(const Json& conf) {
  if (!conf.is_object()) {
    return fail(ErrorCode::kInvalidArgument, "the network configuration is not a JSON object");
  }
  HOSTPORT_TRY(const std::string name, stringMember(conf, "name"));
  HOSTPORT_TRY_VOID(stringMember(conf, "type"));
  Json conflist = Json::object();
  if (const auto version = conf.find("cniVersion"); version != conf.end()) {
    conflist["cniVersion"] = *version;
  }
  conflist["name"] = name;
  conflist["plugins"] = Json::array({conf});
  return conflist;
}

bool isChained(const Json& conflist) {
  auto plugins = pluginsOf(conflist);
  if (!plugins) return false;
  return std::ranges::count_if(**plugins, [](const Json& e) { return hasType(e, kPluginType); }) ==
         1;
}

Result<Json> unchainFromConflist(const Json& conflist,
                                 const std::optional<ReplacedPortmap>& portmap) {
  HOSTPORT_TRY(const Json* plugins, pluginsOf(conflist));
  Json others = Json::array();
  bool hasPortmap = false;
  for (const auto& entry : *plugins) {
    if (hasType(entry, kPluginType)) continue;
    hasPortmap = hasPortmap || hasType(entry, kPortmapType);
    others.push_back(entry);
  }
  // A primary that rewrote its file since brought its own portmap back: a second one would DNAT
  // every hostPort twice.
  if (portmap && !hasPortmap) {
    const auto index = std::min(portmap->index, others.size());
    others.insert(others.begin() + static_cast<std::ptrdiff_t>(index), portmap->entry);
  }
  Json result = conflist;
  result["plugins"] = std::move(others);
  return result;
}

}  // namespace hostport::agent::cni_config
