#include "cni-plugin/plugin_config.h"

#include <map>

#include "agent/api/routes.h"
#include "common/bounded_json.h"

// Everything on stdin is input from the runtime and, through portMappings and annotations, from
// pod authors. Each field is checked for type and range here, once, so later stages can trust
// the typed PluginConfig. Absent and JSON null are the same everywhere, as in Go's decoder,
// because runtimes emit null for empty capability arguments.

namespace hostport::cni {
namespace {

using nlohmann::json;

constexpr size_t kMaxConfigBytes = 4 * 1024 * 1024;
constexpr int kMaxNestingDepth = 64;
constexpr size_t kMaxPortMappings = 1024;
constexpr std::string_view kAnnotationsKey = "io.kubernetes.cri.pod-annotations";

std::unexpected<Error> invalid(std::string_view field, const json& value,
                               std::string_view problem) {
  return invalidValue(ErrorCode::kInvalidArgument, field, value, problem);
}

std::unexpected<Error> missing(std::string_view field) {
  return fail(ErrorCode::kInvalidArgument, std::string(field) + ": missing");
}

/// The depth limit keeps hostile input from exhausting the stack in code that walks the
/// document recursively (copies, dumps).
Result<json> parseDocument(std::string_view text) {
  auto parsed = parseBoundedJson(text, "stdin", kMaxConfigBytes, kMaxNestingDepth);
  if (!parsed) return parsed;
  json document = std::move(*parsed);
  if (!document.is_object()) {
    return invalidValue(ErrorCode::kDecode, "stdin", document, "must be a JSON object");
  }
  return document;
}

Result<std::string> optionalString(const json& object, std::string_view key) {
  const json* value = optionalMember(object, key);
  if (value == nullptr) return std::string();
  if (!value->is_string()) return invalid(key, *value, "must be a string");
  return value->get<std::string>();
}

Result<std::string> requiredString(const json& object, std::string_view key) {
  if (optionalMember(object, key) == nullptr) return missing(key);
  return optionalString(object, key);
}

Result<bool> optionalBool(const json& object, std::string_view key, bool fallback) {
  const json* value = optionalMember(object, key);
  if (value == nullptr) return fallback;
  if (!value->is_boolean()) return invalid(key, *value, "must be true or false");
  return value->get<bool>();
}

/// portmap's conditionsV4/V6: a list of nft match tokens, validated as one expression.
Result<std::string> parseConditions(const json& object, std::string_view key) {
  const json* value = optionalMember(object, key);
  if (value == nullptr) return std::string();
  if (!value->is_array()) return invalid(key, *value, "must be an array of strings");
  std::vector<std::string> parts;
  for (size_t i = 0; i < value->size(); ++i) {
    const json& part = (*value)[i];
    const std::string field = std::string(key) + "[" + std::to_string(i) + "]";
    if (!part.is_string()) return invalid(field, part, "must be a string");
    parts.push_back(part.get<std::string>());
  }
  if (parts.empty()) return std::string();
  auto conditions = nft::validateConditions(parts);
  if (!conditions) return withContext(std::move(conditions.error()), std::string(key));
  return conditions;
}

std::string asciiLower(std::string_view text) {
  std::string lower(text);
  for (char& c : lower) {
    if (c >= 'A' && c <= 'Z') c = static_cast<char>(c - 'A' + 'a');
  }
  return lower;
}

/// containerd sends "HostPort", podman "hostPort". Two spellings of one key in an entry are
/// refused rather than resolved, since either choice would be a guess.
Result<std::map<std::string, const json*>> foldKeys(const json& entry, const std::string& field) {
  std::map<std::string, const json*> folded;
  for (const auto& [key, value] : entry.items()) {
    if (!folded.emplace(asciiLower(key), &value).second) {
      return invalid(field, key, "repeats a key that differs only in case");
    }
  }
  return folded;
}

const json* foldedMember(const std::map<std::string, const json*>& folded, const std::string& key) {
  const auto it = folded.find(key);
  return it == folded.end() || it->second->is_null() ? nullptr : it->second;
}

/// 80.0 and "80" are refused, not coerced: a runtime that sends them is broken, and guessing
/// would hide it.
Result<uint16_t> parsePort(const json* value, const std::string& field) {
  if (value == nullptr) return missing(field);
  if (!value->is_number_integer()) return invalid(field, *value, "must be an integer");
  const bool inRange = value->is_number_unsigned()
                           ? value->get<uint64_t>() >= 1 && value->get<uint64_t>() <= 65535
                           : value->get<int64_t>() >= 1 && value->get<int64_t>() <= 65535;
  if (!inRange) return invalid(field, *value, "is outside 1..65535");
  return static_cast<uint16_t>(value->get<uint64_t>());
}

Result<Protocol> parseProtocolField(const json* value, const std::string& field) {
  if (value == nullptr) return Protocol::kTcp;
  if (!value->is_string()) return invalid(field, *value, "must be a string");
  const auto& text = value->get_ref<const std::string&>();
  if (text.empty()) return Protocol::kTcp;
  auto protocol = parseProtocol(text);
  if (!protocol) return invalid(field, *value, "is not tcp, udp or sctp");
  return *protocol;
}

/// An unspecified address binds every local address, which is what "no hostIP" means too.
Result<std::optional<IpAddress>> parseHostIp(const json* value, const std::string& field) {
  if (value == nullptr) return std::nullopt;
  if (!value->is_string()) return invalid(field, *value, "must be a string");
  const auto& text = value->get_ref<const std::string&>();
  if (text.empty()) return std::nullopt;
  auto address = IpAddress::parse(text);
  if (!address) return invalid(field, *value, "is not an IP address");
  if (address->isUnspecified()) return std::nullopt;
  return *address;
}

Result<PortMapping> parsePortMapping(const json& entry, const std::string& field) {
  if (!entry.is_object()) return invalid(field, entry, "must be an object");
  auto keys = foldKeys(entry, field);
  if (!keys) return std::unexpected(std::move(keys.error()));
  PortMapping mapping;
  auto hostPort = parsePort(foldedMember(*keys, "hostport"), field + ".hostPort");
  if (!hostPort) return std::unexpected(std::move(hostPort.error()));
  auto containerPort = parsePort(foldedMember(*keys, "containerport"), field + ".containerPort");
  if (!containerPort) return std::unexpected(std::move(containerPort.error()));
  auto protocol = parseProtocolField(foldedMember(*keys, "protocol"), field + ".protocol");
  if (!protocol) return std::unexpected(std::move(protocol.error()));
  auto hostIp = parseHostIp(foldedMember(*keys, "hostip"), field + ".hostIP");
  if (!hostIp) return std::unexpected(std::move(hostIp.error()));
  return PortMapping{*hostPort, *containerPort, *protocol, std::move(*hostIp)};
}

Result<std::vector<PortMapping>> parsePortMappings(const json& runtimeConfig) {
  constexpr std::string_view kField = "runtimeConfig.portMappings";
  const json* entries = optionalMember(runtimeConfig, "portMappings");
  if (entries == nullptr) return std::vector<PortMapping>();
  if (!entries->is_array()) return invalid(kField, *entries, "must be an array");
  if (entries->size() > kMaxPortMappings) {
    return fail(ErrorCode::kInvalidArgument,
                std::string(kField) + ": " + std::to_string(entries->size()) +
                    " entries exceed the limit of " + std::to_string(kMaxPortMappings));
  }
  std::vector<PortMapping> mappings;
  mappings.reserve(entries->size());
  for (size_t i = 0; i < entries->size(); ++i) {
    auto mapping =
        parsePortMapping((*entries)[i], std::string(kField) + "[" + std::to_string(i) + "]");
    if (!mapping) return std::unexpected(std::move(mapping.error()));
    mappings.push_back(std::move(*mapping));
  }
  return mappings;
}

/// The annotations are only type-checked here; their grammar belongs to the annotation parser.
Result<json> parseAnnotations(const json& runtimeConfig) {
  const json* annotations = optionalMember(runtimeConfig, kAnnotationsKey);
  if (annotations == nullptr) return json::object();
  if (!annotations->is_object()) {
    return invalid("runtimeConfig[\"" + std::string(kAnnotationsKey) + "\"]", *annotations,
                   "must be an object");
  }
  return *annotations;
}

Result<void> parseRuntimeConfig(const json& document, PluginConfig& config) {
  const json* runtimeConfig = optionalMember(document, "runtimeConfig");
  if (runtimeConfig == nullptr) return {};
  if (!runtimeConfig->is_object())
    return invalid("runtimeConfig", *runtimeConfig, "must be an object");
  auto mappings = parsePortMappings(*runtimeConfig);
  if (!mappings) return std::unexpected(std::move(mappings.error()));
  auto annotations = parseAnnotations(*runtimeConfig);
  if (!annotations) return std::unexpected(std::move(annotations.error()));
  config.portMappings = std::move(*mappings);
  config.podAnnotations = std::move(*annotations);
  return {};
}

Result<void> parsePrevResult(const json& document, PluginConfig& config) {
  const json* prevResult = optionalMember(document, "prevResult");
  if (prevResult == nullptr) return {};
  if (!prevResult->is_object()) return invalid("prevResult", *prevResult, "must be an object");
  config.prevResult = *prevResult;
  return {};
}

/// Our own options, in the conflist entry next to "type": "hostport".
Result<void> parseOptions(const json& document, PluginConfig& config) {
  auto cniVersion = requiredString(document, "cniVersion");
  if (!cniVersion) return std::unexpected(std::move(cniVersion.error()));
  auto name = optionalString(document, "name");
  if (!name) return std::unexpected(std::move(name.error()));
  auto snat = optionalBool(document, "snat", true);
  if (!snat) return std::unexpected(std::move(snat.error()));
  auto masqAll = optionalBool(document, "masqAll", false);
  if (!masqAll) return std::unexpected(std::move(masqAll.error()));
  auto conditionsV4 = parseConditions(document, "conditionsV4");
  if (!conditionsV4) return std::unexpected(std::move(conditionsV4.error()));
  auto conditionsV6 = parseConditions(document, "conditionsV6");
  if (!conditionsV6) return std::unexpected(std::move(conditionsV6.error()));
  auto agentSocket = optionalString(document, "agentSocket");
  if (!agentSocket) return std::unexpected(std::move(agentSocket.error()));
  config.cniVersion = std::move(*cniVersion);
  config.name = std::move(*name);
  config.snat = *snat;
  config.masqAll = *masqAll;
  config.conditionsV4 = std::move(*conditionsV4);
  config.conditionsV6 = std::move(*conditionsV6);
  // Absent means the agent at its usual place; only an explicit "" runs without one.
  config.agentSocket = optionalMember(document, "agentSocket") == nullptr
                           ? std::string(agent::api::kDefaultAgentSocket)
                           : std::move(*agentSocket);
  return {};
}

}  // namespace

const json* optionalMember(const json& object, std::string_view key) {
  if (!object.is_object()) return nullptr;
  const auto it = object.find(key);
  return it == object.end() || it->is_null() ? nullptr : &*it;
}

std::unexpected<Error> invalidValue(ErrorCode code, std::string_view field, const json& value,
                                    std::string_view problem) {
  return fail(code, std::string(field) + ": " + echo(value) + " " + std::string(problem));
}

Result<PluginConfig> parsePluginConfig(std::string_view text) {
  auto document = parseDocument(text);
  if (!document) return std::unexpected(std::move(document.error()));
  PluginConfig config;
  for (const auto parse : {parseOptions, parseRuntimeConfig, parsePrevResult}) {
    if (auto parsed = parse(*document, config); !parsed) return std::unexpected(parsed.error());
  }
  config.raw = std::move(*document);
  return config;
}

}  // namespace hostport::cni
