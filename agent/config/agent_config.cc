#include "agent/config/agent_config.h"

#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <set>
#include <sstream>

#include "agent/config/listen_address.h"
#include "agent/config/settings.h"
#include "agent/log/event_log.h"
#include "common/ascii.h"
#include "common/identifiers.h"
#include "common/quote.h"

namespace hostport::agent::config {
namespace {

/// A key path as it goes into a message. Its keys come from the file (pool names, typos): a path
/// of plain words reads best bare, and anything else goes through quoteText(), so a key can
/// neither forge a log line nor run on.
std::string keyPathText(std::string_view key) {
  constexpr std::size_t kMaxBareKeyPath = 128;  // "pools." + a 63-character name + ".ranges[i]"
  const bool plain = key.size() <= kMaxBareKeyPath && std::ranges::all_of(key, [](char c) {
                       return ascii::isAlnum(c) || std::string_view("._-[]() ").contains(c);
                     });
  return plain ? std::string(key) : quoteText(key);
}

class YamlReader {
 public:
  explicit YamlReader(std::string_view source) : source_(source) {}

  /// "config.yaml: pools.games.ranges[0]": where a key's value is, for an error.
  std::string where(const std::string& key) const {
    return std::string(source_) + ": " + keyPathText(key);
  }
  std::unexpected<Error> error(const std::string& key, const std::string& problem) const {
    return fail(ErrorCode::kInvalidArgument, where(key) + ": " + problem);
  }

  Result<std::string> scalar(const YAML::Node& node, const std::string& key) const {
    if (!node.IsScalar()) return error(key, "must be a string");
    return node.as<std::string>();
  }

  /// A whole number in [min, max], written in decimal digits.
  Result<uint64_t> count(const YAML::Node& node, const std::string& key, uint64_t min,
                         uint64_t max) const {
    HOSTPORT_TRY(const std::string text, scalar(node, key));
    return parseWholeNumber(text, where(key), min, max);
  }

  /// The file's top level: the settings' keys (settings.h) and pools.
  Result<void> checkTopLevelKeys(const YAML::Node& root) const {
    std::vector<std::string_view> keys{"pools"};
    for (const Setting& setting : settings()) keys.push_back(setting.key);
    return checkKeys(root, "", keys);
  }

  Result<void> checkKeys(const YAML::Node& map, const std::string& prefix,
                         const std::vector<std::string_view>& allowed) const {
    if (!map.IsMap()) return error(prefix.empty() ? "(top level)" : prefix, "must be a mapping");
    HOSTPORT_TRY_VOID(checkUniqueKeys(map, prefix));
    for (const auto& entry : map) {
      const auto key = entry.first.as<std::string>();
      if (std::ranges::find(allowed, key) == allowed.end()) {
        return error(prefix.empty() ? key : prefix + "." + key, "unknown key");
      }
    }
    return {};
  }

  /// yaml-cpp keeps both entries of a repeated key and lookups see only the first, so a second
  /// `logLevel:` further down a long file would be silently ignored.
  Result<void> checkUniqueKeys(const YAML::Node& map, const std::string& prefix) const {
    std::set<std::string> seen;
    for (const auto& entry : map) {
      const auto key = entry.first.as<std::string>();
      if (!seen.insert(key).second) {
        return error(prefix.empty() ? key : prefix + "." + key, "appears more than once");
      }
    }
    return {};
  }

 private:
  std::string_view source_;
};

/// namespaces, maxPortsPerNamespace and maxPortsPerPod of one pool (agent/core/pool_rules.h).
Result<core::PoolRules> parsePoolRules(const YamlReader& yaml, const std::string& prefix,
                                       const YAML::Node& node) {
  core::PoolRules rules;
  if (const auto namespaces = node["namespaces"]) {
    const std::string key = prefix + ".namespaces";
    // An empty list would read as "every namespace" (the absent key's meaning) or as "none";
    // neither is what a writer of [] can be trusted to mean, so it is refused.
    if (!namespaces.IsSequence() || namespaces.size() == 0) {
      return yaml.error(key,
                        "must be a non-empty list such as [\"games-*\", \"media\"] (leave it out "
                        "to allow every namespace)");
    }
    for (std::size_t i = 0; i < namespaces.size(); ++i) {
      const auto entry = key + "[" + std::to_string(i) + "]";
      HOSTPORT_TRY(std::string pattern, yaml.scalar(namespaces[i], entry));
      if (const Problem problem = core::namespacePatternProblem(pattern)) {
        return yaml.error(entry, quoteText(pattern) + " " + std::string(*problem));
      }
      rules.namespaces.push_back(std::move(pattern));
    }
  }
  for (const auto& [name, target] : {std::pair{"maxPortsPerNamespace", &rules.maxPortsPerNamespace},
                                     {"maxPortsPerPod", &rules.maxPortsPerPod}}) {
    if (const auto quota = node[name]) {
      // At least 1: a quota of 0 would be a namespace rule in disguise; `namespaces` says it.
      HOSTPORT_TRY(const uint64_t ports, yaml.count(quota, prefix + "." + name, 1, 65535));
      *target = static_cast<uint32_t>(ports);
    }
  }
  return rules;
}

Result<core::PoolSpec> parsePool(const YamlReader& yaml, const std::string& name,
                                 const YAML::Node& node) {
  const std::string prefix = "pools." + name;
  HOSTPORT_TRY_VOID(yaml.checkKeys(node, prefix,
                                   {"ranges", "protocols", "strategy", "reuseDelaySeconds", "scope",
                                    "namespaces", "maxPortsPerNamespace", "maxPortsPerPod"}));
  core::PoolSpec pool{name, {}, {}, core::Strategy::kLowest};
  const auto ranges = node["ranges"];
  if (!ranges || !ranges.IsSequence() || ranges.size() == 0) {
    return yaml.error(prefix + ".ranges", "must be a non-empty list such as [\"30000-32767\"]");
  }
  for (std::size_t i = 0; i < ranges.size(); ++i) {
    const auto key = prefix + ".ranges[" + std::to_string(i) + "]";
    HOSTPORT_TRY(const std::string text, yaml.scalar(ranges[i], key));
    auto range = PortRange::parse(text);
    if (!range) return yaml.error(key, range.error().message);
    pool.ranges.push_back(*range);
  }
  if (const auto protocols = node["protocols"]) {
    if (!protocols.IsSequence()) return yaml.error(prefix + ".protocols", "must be a list");
    for (std::size_t i = 0; i < protocols.size(); ++i) {
      const auto key = prefix + ".protocols[" + std::to_string(i) + "]";
      HOSTPORT_TRY(const std::string text, yaml.scalar(protocols[i], key));
      auto protocol = parsePortProtocol(text);
      if (!protocol) return yaml.error(key, quoteText(text) + " is not tcp, udp, sctp or tcpudp");
      pool.protocols.push_back(*protocol);
    }
  }
  if (const auto strategy = node["strategy"]) {
    HOSTPORT_TRY(const std::string text, yaml.scalar(strategy, prefix + ".strategy"));
    auto parsed = core::parseStrategy(text);
    if (!parsed) {
      return yaml.error(prefix + ".strategy",
                        quoteText(text) + " is not one of lowest, random, round-robin");
    }
    pool.strategy = *parsed;
  }
  if (const auto delay = node["reuseDelaySeconds"]) {
    HOSTPORT_TRY(const uint64_t seconds,
                 yaml.count(delay, prefix + ".reuseDelaySeconds", 0, core::kMaxReuseDelaySeconds));
    pool.reuseDelaySeconds = static_cast<uint32_t>(seconds);
  }
  if (const auto scope = node["scope"]) {
    HOSTPORT_TRY(const std::string text, yaml.scalar(scope, prefix + ".scope"));
    auto parsed = core::parseScope(text);
    if (!parsed) return yaml.error(prefix + ".scope", parsed.error().message);
    pool.scope = *parsed;
    // Pods that name no pool get "default", and the claim webhook sees only pods that name a
    // cluster pool: a cluster-scoped default would leave them without their claims.
    if (pool.scope == core::PoolScope::kCluster && name == kDefaultPool) {
      return yaml.error(prefix + ".scope",
                        "the default pool serves pods that name no pool and cannot be a cluster "
                        "pool: give the cluster pool a name of its own");
    }
  }
  HOSTPORT_TRY(pool.rules, parsePoolRules(yaml, prefix, node));
  return pool;
}

/// Pods mount the pod socket's directory: the control socket, which can release any lease, must
/// be neither in it nor below it.
Result<void> checkPodSocket(const AgentConfig& config) {
  const std::string& path = config.podSocketPath;
  if (path.empty()) return {};
  if (path.front() != '/' || path.size() > 100 || path.back() == '/') {
    return fail(ErrorCode::kInvalidArgument,
                "podSocket: " + quoteText(path) +
                    " must be an absolute path of at most 100 characters, naming a file");
  }
  const auto podDir = std::filesystem::path(path).lexically_normal().parent_path();
  const auto controlDir = std::filesystem::path(config.socketPath).lexically_normal().parent_path();
  const auto [podEnd, controlAt] =
      std::mismatch(podDir.begin(), podDir.end(), controlDir.begin(), controlDir.end());
  if (podEnd == podDir.end()) {
    return fail(ErrorCode::kInvalidArgument,
                "podSocket: " + quoteText(path) +
                    " is in a directory that holds the control socket " +
                    quoteText(config.socketPath) +
                    ", and pods mount that directory: give the pod socket a directory of its own, "
                    "such as " +
                    std::string(api::kDefaultPodSocket));
  }
  return {};
}

}  // namespace

Result<std::vector<PortRange>> parsePortRanges(std::string_view text) {
  std::vector<PortRange> ranges;
  std::size_t start = 0;
  while (start <= text.size()) {
    const auto comma = text.find(',', start);
    auto item = text.substr(start, comma == std::string_view::npos ? text.npos : comma - start);
    while (!item.empty() && item.front() == ' ') item.remove_prefix(1);
    while (!item.empty() && item.back() == ' ') item.remove_suffix(1);
    HOSTPORT_TRY(const PortRange range, PortRange::parse(item));  // it already names the range
    ranges.push_back(range);
    if (comma == std::string_view::npos) break;
    start = comma + 1;
  }
  return ranges;
}

Result<void> applyYamlConfig(std::string_view text, std::string_view source, AgentConfig& config) {
  const YamlReader yaml(source);
  YAML::Node root;
  try {
    root = YAML::Load(std::string(text));
  } catch (const YAML::Exception& e) {
    return fail(ErrorCode::kInvalidArgument, std::string(source) + ": not valid YAML: " + e.what());
  }
  if (root.IsNull()) return {};
  try {
    HOSTPORT_TRY_VOID(yaml.checkTopLevelKeys(root));
    for (const Setting& setting : settings()) {
      const std::string key(setting.key);
      if (const auto node = root[key]) {
        HOSTPORT_TRY(const std::string text, yaml.scalar(node, key));
        HOSTPORT_TRY_VOID(applySetting(setting, text, yaml.where(key), config));
      }
    }
    if (const auto pools = root["pools"]) {
      if (!pools.IsMap()) return yaml.error("pools", "must be a mapping of pool name to pool");
      HOSTPORT_TRY_VOID(yaml.checkUniqueKeys(pools, "pools"));
      config.pools.clear();
      for (const auto& entry : pools) {
        const auto name = entry.first.as<std::string>();
        // Pools are chosen by the hostport.io/pool annotation, so their names share its grammar.
        if (const Problem problem = dnsLabelProblem(name)) {
          return yaml.error("pools." + name, "pool names " + std::string(*problem));
        }
        HOSTPORT_TRY(core::PoolSpec pool, parsePool(yaml, name, entry.second));
        config.pools.push_back(std::move(pool));
      }
    }
  } catch (const YAML::Exception& e) {
    return fail(ErrorCode::kInvalidArgument, std::string(source) + ": " + e.what());
  }
  return {};
}

void setDefaultPoolRanges(AgentConfig& config, std::vector<PortRange> ranges) {
  for (auto& pool : config.pools) {
    if (pool.name == kDefaultPool) {
      pool.ranges = std::move(ranges);
      return;
    }
  }
  config.pools.push_back(
      {std::string(kDefaultPool), std::move(ranges), {}, core::Strategy::kLowest});
}

Result<ChainCni> parseChainCni(std::string_view text) {
  if (text == "auto") return ChainCni::kAuto;
  if (text == "true") return ChainCni::kOn;
  if (text == "false") return ChainCni::kOff;
  return fail(ErrorCode::kInvalidArgument, quoteText(text) + " is not auto, true or false");
}

std::string nodeNameOf(const AgentConfig& config) {
  if (!config.nodeName.empty()) return config.nodeName;
  const char* env = std::getenv("NODE_NAME");
  return env == nullptr ? std::string{} : std::string(env);
}

bool chainsCni(const AgentConfig& config, bool inCluster) {
  return config.chainCni == ChainCni::kOn || (config.chainCni == ChainCni::kAuto && inCluster);
}

Result<void> finalizeConfig(AgentConfig& config) {
  // Only a config without pools gets the built-in default pool: adding it beside configured
  // ones would overlap them behind the user's back.
  if (config.pools.empty()) setDefaultPoolRanges(config, {*PortRange::parse(kDefaultPortRange)});
  if (config.stateDir.empty() || config.stateDir.front() != '/') {
    return fail(ErrorCode::kInvalidArgument,
                "stateDir: " + quoteText(config.stateDir) + " must be an absolute path");
  }
  if (config.socketPath.empty() || config.socketPath.front() != '/' ||
      config.socketPath.size() > 100) {
    return fail(ErrorCode::kInvalidArgument,
                "socket: " + quoteText(config.socketPath) +
                    " must be an absolute path of at most 100 characters");
  }
  HOSTPORT_TRY_VOID(checkPodSocket(config));
  if (!config.kubeconfig.empty() && config.kubeconfig.front() != '/') {
    return fail(ErrorCode::kInvalidArgument,
                "kubeconfig: " + quoteText(config.kubeconfig) + " must be an absolute path");
  }
  if (!config.nodeName.empty()) {
    if (const Problem problem = dnsSubdomainProblem(config.nodeName)) {
      return fail(ErrorCode::kInvalidArgument,
                  "nodeName: " + quoteText(config.nodeName) + " " + std::string(*problem));
    }
  }
  for (const auto& [key, dir] : {std::pair{"cniConfDir", &config.cniConfDir},
                                 {"cniBinDir", &config.cniBinDir},
                                 {"procSysNet", &config.procSysNet},
                                 {"kubeletDir", &config.kubeletDir}}) {
    if (dir->empty() || dir->front() != '/') {
      return fail(ErrorCode::kInvalidArgument,
                  std::string(key) + ": " + quoteText(*dir) + " must be an absolute path");
    }
  }
  // Volumes' target paths are compared with it component by component (agent/csi/pod_volume.h).
  if (std::filesystem::path(config.kubeletDir).lexically_normal() != config.kubeletDir) {
    return fail(ErrorCode::kInvalidArgument,
                "kubeletDir: " + quoteText(config.kubeletDir) +
                    " must be a plain absolute path (no \".\", \"..\" or \"//\")");
  }
  if (auto level = log::parseLevel(config.logLevel); !level) {
    return withContext(level.error(), "logLevel");
  }
  if (auto format = log::parseFormat(config.logFormat); !format) {
    return withContext(format.error(), "logFormat");
  }
  if (!config.metricsAddress.empty()) {
    if (auto address = parseListenAddress(config.metricsAddress); !address) {
      return withContext(address.error(), "metricsAddress");
    }
  }
  // Let the allocator judge overlaps and sizes now, so a bad config fails at start.
  auto probe = core::Allocator::create(config.pools, [] { return uint64_t{0}; });
  if (!probe) return withContext(probe.error(), "pools");
  return {};
}

Result<void> applyCommandLine(const CommandLine& commandLine, AgentConfig& config) {
  if (!commandLine.portRange.empty()) {
    auto ranges = parsePortRanges(commandLine.portRange);
    if (!ranges) return withContext(ranges.error(), "--port-range");
    setDefaultPoolRanges(config, std::move(*ranges));
  }
  HOSTPORT_TRY_VOID(settings::applyFlags(settings(), commandLine.settings, config));
  return {};
}

Result<AgentConfig> resolveConfig(const CommandLine& commandLine) {
  AgentConfig config;
  if (!commandLine.configPath.empty()) {
    std::ifstream file(commandLine.configPath);
    if (!file) {
      return fail(ErrorCode::kInvalidArgument, "--config: cannot read " + commandLine.configPath);
    }
    std::stringstream text;
    text << file.rdbuf();
    HOSTPORT_TRY_VOID(applyYamlConfig(text.str(), commandLine.configPath, config));
  }
  HOSTPORT_TRY_VOID(applyCommandLine(commandLine, config));
  HOSTPORT_TRY_VOID(finalizeConfig(config));
  return config;
}

}  // namespace hostport::agent::config
