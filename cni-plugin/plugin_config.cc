#include "cni-plugin/plugin_config.h"

#include <array>
#include <map>
#include <set>

#include "agent/api/json_codec.h"
#include "agent/api/node_files.h"
#include "agent/api/routes.h"
#include "common/ascii.h"
#include "common/bounded_json.h"
#include "common/identifiers.h"
#include "common/json_fields.h"

// Everything on stdin is input from the runtime and, through portMappings and annotations, from
// pod authors. Each field is checked for type and range here, once, so later stages can trust
// the typed PluginConfig. Absent and JSON null are the same everywhere, as in Go's decoder,
// because runtimes emit null for empty capability arguments.

namespace hostport::cni {
namespace {

using nlohmann::json;

constexpr int kMaxNestingDepth = 64;
constexpr size_t kMaxPortMappings = 1024;
constexpr std::string_view kAnnotationsKey = "io.kubernetes.cri.pod-annotations";

/// The depth limit keeps hostile input from exhausting the stack in code that walks the
/// document recursively (copies, dumps).
Result<json> parseDocument(std::string_view text) {
  HOSTPORT_TRY(json document, parseBoundedJson(text, "stdin", kMaxConfigBytes, kMaxNestingDepth));
  if (!document.is_object()) {
    return invalidValue("stdin", document, "must be a JSON object", ErrorCode::kDecode);
  }
  return document;
}

/// portmap's conditionsV4/V6: a list of nft match tokens, validated as one expression.
Result<std::string> parseConditions(const json& object, std::string_view key) {
  const json* value = jsonMember(object, key);
  if (value == nullptr) return std::string();
  if (!value->is_array()) return invalidValue(key, *value, "must be an array of strings");
  std::vector<std::string> parts;
  for (size_t i = 0; i < value->size(); ++i) {
    HOSTPORT_TRY(std::string part, readString(JsonField{&(*value)[i], elementPath(key, i)}));
    parts.push_back(std::move(part));
  }
  if (parts.empty()) return std::string();
  auto conditions = nft::validateConditions(parts);
  if (!conditions) return withContext(std::move(conditions.error()), std::string(key));
  return conditions;
}

using FoldedKeys = std::map<std::string, const json*>;

/// containerd sends "HostPort", podman "hostPort". Two spellings of one key in an entry are
/// refused rather than resolved, since either choice would be a guess.
Result<FoldedKeys> foldKeys(const json& entry, const std::string& path) {
  FoldedKeys folded;
  for (const auto& [key, value] : entry.items()) {
    if (!folded.emplace(ascii::lowercase(key), &value).second) {
      return invalidValue(path, key, "repeats a key that differs only in case");
    }
  }
  return folded;
}

/// The entry's `key`, in any case, at `<path>.<key>`.
JsonField foldedField(const FoldedKeys& folded, const std::string& path, std::string_view key) {
  const auto it = folded.find(ascii::lowercase(key));
  const json* value = it == folded.end() || it->second->is_null() ? nullptr : it->second;
  return JsonField{value, memberPath(path, key)};
}

Result<PortMapping> parsePortMapping(const json& entry, const std::string& path) {
  if (!entry.is_object()) return invalidValue(path, entry, "must be an object");
  HOSTPORT_TRY(const FoldedKeys keys, foldKeys(entry, path));
  PortMapping mapping;
  HOSTPORT_TRY(mapping.hostPort, readPort(foldedField(keys, path, "hostPort")));
  HOSTPORT_TRY(mapping.containerPort, readPort(foldedField(keys, path, "containerPort")));
  HOSTPORT_TRY(mapping.protocol, readProtocol(foldedField(keys, path, "protocol")));
  HOSTPORT_TRY(mapping.hostIp, readHostIp(foldedField(keys, path, "hostIP")));
  return mapping;
}

Result<std::vector<PortMapping>> parsePortMappings(const json& runtimeConfig) {
  const JsonField field = jsonField(runtimeConfig, "runtimeConfig", "portMappings");
  HOSTPORT_TRY(const json* entries, readArrayOrEmpty(field, kMaxPortMappings));
  std::vector<PortMapping> mappings;
  mappings.reserve(entries->size());
  for (size_t i = 0; i < entries->size(); ++i) {
    HOSTPORT_TRY(PortMapping mapping, parsePortMapping((*entries)[i], elementPath(field.path, i)));
    mappings.push_back(std::move(mapping));
  }
  return mappings;
}

/// The annotations are only type-checked here; their grammar belongs to the annotation parser.
Result<json> parseAnnotations(const json& runtimeConfig) {
  const json* annotations = jsonMember(runtimeConfig, kAnnotationsKey);
  if (annotations == nullptr) return json::object();
  if (!annotations->is_object()) {
    return invalidValue("runtimeConfig[\"" + std::string(kAnnotationsKey) + "\"]", *annotations,
                        "must be an object");
  }
  return *annotations;
}

Result<void> parseRuntimeConfig(const json& document, PluginConfig& config) {
  const json* runtimeConfig = jsonMember(document, "runtimeConfig");
  if (runtimeConfig == nullptr) return {};
  if (!runtimeConfig->is_object()) {
    return invalidValue("runtimeConfig", *runtimeConfig, "must be an object");
  }
  HOSTPORT_TRY(config.portMappings, parsePortMappings(*runtimeConfig));
  HOSTPORT_TRY(config.podAnnotations, parseAnnotations(*runtimeConfig));
  return {};
}

Result<void> parsePrevResult(const json& document, PluginConfig& config) {
  const json* prevResult = jsonMember(document, "prevResult");
  if (prevResult == nullptr) return {};
  if (!prevResult->is_object()) {
    return invalidValue("prevResult", *prevResult, "must be an object");
  }
  config.prevResult = *prevResult;
  return {};
}

/// Our own options, in the conflist entry next to "type": "hostport".
Result<void> parseOptions(const json& document, PluginConfig& config) {
  const auto option = [&](std::string_view key) { return jsonField(document, "", key); };
  HOSTPORT_TRY(config.cniVersion, readString(option("cniVersion")));
  HOSTPORT_TRY(config.name, readString(option("name"), ""));
  HOSTPORT_TRY(config.snat, readBool(option("snat"), true));
  HOSTPORT_TRY(config.masqAll, readBool(option("masqAll"), false));
  HOSTPORT_TRY(config.staticPorts, readBool(option("staticPorts"), true));
  HOSTPORT_TRY(config.conditionsV4, parseConditions(document, "conditionsV4"));
  HOSTPORT_TRY(config.conditionsV6, parseConditions(document, "conditionsV6"));
  // Absent means the agent at its usual place; only an explicit "" runs without one.
  HOSTPORT_TRY(config.agentSocket,
               readString(option("agentSocket"), agent::api::kDefaultAgentSocket));
  HOSTPORT_TRY(const uint64_t grace,
               readInteger(option("statusGraceSeconds"), 0, 86400, kDefaultStatusGraceSeconds));
  config.statusGraceSeconds = static_cast<uint32_t>(grace);
  HOSTPORT_TRY(config.stateDir, readString(option("stateDir"), agent::api::kDefaultRecordDir));
  // The netns grammar is the one for any absolute path we open: printable, bounded.
  if (const Problem problem = netnsPathProblem(config.stateDir)) {
    return invalidValue("stateDir", json(config.stateDir), *problem);
  }
  HOSTPORT_TRY(config.releaseSpool,
               readString(option("releaseSpool"), agent::api::kDefaultReleaseSpool));
  if (const Problem problem = netnsPathProblem(config.releaseSpool)) {
    return invalidValue("releaseSpool", json(config.releaseSpool), *problem);
  }
  return {};
}

/// One entry of a GC attachment list: {"containerID", "ifname"}, as libcni's GCAttachment.
Result<AttachmentKey> parseGcAttachment(const json& entry, const std::string& path) {
  if (!entry.is_object()) return invalidValue(path, entry, "must be an object");
  const auto read = [&](std::string_view key, Problem (*grammar)(std::string_view)) {
    const JsonField field = jsonField(entry, path, key);
    auto text = readString(field);
    if (!text) return text;
    if (const Problem problem = grammar(*text))
      return Result<std::string>(invalidValue(field, *problem));
    return text;
  };
  AttachmentKey key;
  HOSTPORT_TRY(key.containerId, read("containerID", containerIdProblem));
  HOSTPORT_TRY(key.ifname, read("ifname", ifnameProblem));
  return key;
}

constexpr std::array<std::string_view, 2> kGcAttachmentLists = {"cni.dev/valid-attachments",
                                                                "cni.dev/attachments"};

}  // namespace

Result<PluginConfig> parsePluginConfig(std::string_view text) {
  HOSTPORT_TRY(json document, parseDocument(text));
  PluginConfig config;
  for (const auto parse : {parseOptions, parseRuntimeConfig, parsePrevResult}) {
    HOSTPORT_TRY_VOID(parse(document, config));
  }
  // Still parsed above, so a malformed list fails the same way either way.
  if (!config.staticPorts) config.portMappings.clear();
  config.raw = std::move(document);
  return config;
}

Result<std::vector<AttachmentKey>> parseValidAttachments(const PluginConfig& config) {
  std::set<AttachmentKey> keys;  // both lists usually hold the same keys
  for (const std::string_view list : kGcAttachmentLists) {
    const JsonField field = jsonField(config.raw, "", list);
    HOSTPORT_TRY(const json* entries, readArrayOrEmpty(field, agent::api::kMaxGcKeys));
    for (size_t i = 0; i < entries->size(); ++i) {
      HOSTPORT_TRY(AttachmentKey key, parseGcAttachment((*entries)[i], elementPath(field.path, i)));
      keys.insert(std::move(key));
    }
  }
  if (keys.size() > agent::api::kMaxGcKeys) {
    return fail(ErrorCode::kInvalidArgument, "GC attachment lists: " + std::to_string(keys.size()) +
                                                 " distinct attachments exceed the limit of " +
                                                 std::to_string(agent::api::kMaxGcKeys));
  }
  return std::vector<AttachmentKey>(keys.begin(), keys.end());
}

}  // namespace hostport::cni
