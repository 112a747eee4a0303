#include "tests/support/cni_node.h"

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <random>
#include <sstream>

namespace hostport::test {
namespace {

constexpr const char* kReferencePluginDir = "/usr/lib/cni";
constexpr const char* kSearchPath = "/usr/sbin:/usr/bin:/sbin:/bin";

std::string randomHex(size_t length) {
  static thread_local std::mt19937_64 engine{std::random_device{}()};
  static constexpr char kDigits[] = "0123456789abcdef";
  std::string text;
  for (size_t i = 0; i < length; ++i) text += kDigits[engine() % 16];
  return text;
}

std::string withoutPrefixLength(const std::string& cidr) { return cidr.substr(0, cidr.find('/')); }

// A copy of `result` labelled with `version`, for a plugin that cannot read newer versions
// (1.1.0 results have the 1.0.0 shape).
nlohmann::json relabel(nlohmann::json result, const std::string& version) {
  if (result.is_object()) result["cniVersion"] = version;
  return result;
}

}  // namespace

std::string pluginUnderTest(const std::string& builtPath) {
  const char* override = std::getenv("HOSTPORT_TEST_PLUGIN");
  return override && *override ? override : builtPath;
}

std::string defaultCniVersion() {
  const char* override = std::getenv("HOSTPORT_TEST_CNI_VERSION");
  return override && *override ? override : kNewestCniVersion;
}

int compareCniVersions(const std::string& a, const std::string& b) {
  std::istringstream left(a);
  std::istringstream right(b);
  for (int i = 0; i < 3; ++i) {
    int x = 0;
    int y = 0;
    char dot = 0;
    left >> x;
    right >> y;
    if (x != y) return x < y ? -1 : 1;
    left >> dot;
    right >> dot;
  }
  return 0;
}

std::string bridgeVersionFor(const std::string& cniVersion) {
  return compareCniVersions(cniVersion, kBridgeMaxCniVersion) > 0 ? kBridgeMaxCniVersion
                                                                  : cniVersion;
}

nlohmann::json toJson(const std::vector<PortMapping>& mappings) {
  nlohmann::json list = nlohmann::json::array();
  for (const auto& mapping : mappings) {
    nlohmann::json entry = {{"hostPort", mapping.hostPort},
                            {"containerPort", mapping.containerPort},
                            {"protocol", mapping.protocol}};
    if (!mapping.hostIp.empty()) entry["hostIP"] = mapping.hostIp;
    list.push_back(entry);
  }
  return list;
}

Result<CniError> parseCniError(const std::string& out) {
  auto json = nlohmann::json::parse(out, nullptr, false);
  if (!json.is_object() || !json.contains("code") || !json["code"].is_number_integer()) {
    return fail(ErrorCode::kDecode, "not a CNI error object: '" + out + "'");
  }
  CniError error;
  error.cniVersion = json.value("cniVersion", "");
  error.code = json["code"].get<int>();
  if (json.contains("msg") && json["msg"].is_string()) error.msg = json["msg"];
  if (json.contains("details") && json["details"].is_string()) error.details = json["details"];
  return error;
}

CniNode::CniNode(TempDir dir, Netns node, Netns outside, std::string pluginPath, bool ipv6)
    : dir_(std::move(dir)),
      node_(std::move(node)),
      outside_(std::move(outside)),
      pluginPath_(std::move(pluginPath)),
      ipv6_(ipv6),
      bridge_(uniqueName("hpbr")),
      networkName_("hpt-net-" + randomHex(8)) {}

CniNode::~CniNode() {
  pods_.clear();  // pod namespaces first; their veths die with the node netns anyway
}

Result<std::unique_ptr<CniNode>> CniNode::create(std::string pluginPath, bool ipv6) {
  if (::access(pluginPath.c_str(), X_OK) != 0) {
    return fail(ErrorCode::kNotFound, "plugin under test is not executable: " + pluginPath);
  }
  HOSTPORT_TRY(TempDir dir, TempDir::create());
  HOSTPORT_TRY(Netns node, Netns::create());
  HOSTPORT_TRY(Netns outside, Netns::create());
  std::unique_ptr<CniNode> result(new CniNode(std::move(dir), std::move(node), std::move(outside),
                                              std::move(pluginPath), ipv6));
  HOSTPORT_TRY_VOID(result->setUp());
  return result;
}

namespace {

Result<void> disableDad(const Netns& netns) {
  // Without this, the bridge's IPv6 gateway address stays tentative for about two seconds after
  // bridge ADD and pods cannot route through it yet.
  const auto turnOff = [] {
    bool ok = true;
    for (const char* path :
         {"/proc/sys/net/ipv6/conf/all/accept_dad", "/proc/sys/net/ipv6/conf/default/accept_dad"}) {
      std::ofstream file(path);
      file << "0\n";
      file.flush();
      ok = ok && file.good();
    }
    return ok;
  };
  HOSTPORT_TRY(const bool written, netns.run(turnOff));
  if (!written) return fail(ErrorCode::kIo, "cannot turn off IPv6 DAD in " + netns.name());
  return {};
}

}  // namespace

Result<void> CniNode::setUp() {
  if (auto done = disableDad(node_); !done) return done;
  const std::vector<std::vector<std::string>> nodeSteps = {
      {"link", "add", "hp0", "type", "veth", "peer", "name", "hp1", "netns", outside_.name()},
      {"addr", "add", std::string(kNodeIpV4) + "/24", "dev", "hp0"},
      {"addr", "add", std::string(kSecondNodeIpV4) + "/24", "dev", "hp0"},
      {"addr", "add", std::string(kNodeIpV6) + "/64", "dev", "hp0", "nodad"},
      {"addr", "add", std::string(kSecondNodeIpV6) + "/64", "dev", "hp0", "nodad"},
      {"link", "set", "hp0", "up"},
  };
  for (const auto& step : nodeSteps) {
    HOSTPORT_TRY_VOID(node_.ip(step));
  }
  const std::vector<std::vector<std::string>> outsideSteps = {
      {"addr", "add", std::string(kOutsideIpV4) + "/24", "dev", "hp1"},
      {"addr", "add", std::string(kSecondOutsideIpV4) + "/24", "dev", "hp1"},
      {"addr", "add", std::string(kOutsideIpV6) + "/64", "dev", "hp1", "nodad"},
      {"link", "set", "hp1", "up"},
  };
  for (const auto& step : outsideSteps) {
    HOSTPORT_TRY_VOID(outside_.ip(step));
  }
  return {};
}

Result<Pod*> CniNode::createPod(const std::string& label) {
  HOSTPORT_TRY(Netns netns, Netns::create());
  HOSTPORT_TRY_VOID(disableDad(netns));
  auto pod =
      std::unique_ptr<Pod>(new Pod{.label = label,
                                   .netns = std::move(netns),
                                   .containerId = "hpt" + randomHex(61),
                                   .uid = randomHex(8) + "-" + randomHex(4) + "-" + randomHex(4) +
                                          "-" + randomHex(4) + "-" + randomHex(12)});
  pods_.push_back(std::move(pod));
  return pods_.back().get();
}

nlohmann::json CniNode::bridgeConfig(const std::string& cniVersion,
                                     const std::optional<nlohmann::json>& prevResult) const {
  nlohmann::json ranges =
      nlohmann::json::array({nlohmann::json::array({{{"subnet", kPodSubnetV4}}})});
  nlohmann::json routes = nlohmann::json::array({{{"dst", "0.0.0.0/0"}}});
  if (ipv6_) {
    ranges.push_back(nlohmann::json::array({{{"subnet", kPodSubnetV6}}}));
    routes.push_back({{"dst", "::/0"}});
  }
  nlohmann::json config = {
      {"cniVersion", cniVersion},
      {"name", networkName_},
      {"type", "bridge"},
      {"bridge", bridge_},
      {"isGateway", true},
      {"hairpinMode", true},
      {"ipMasq", false},
      {"ipam",
       {{"type", "host-local"},
        {"dataDir", dir_.path() + "/ipam"},
        {"ranges", ranges},
        {"routes", routes}}},
  };
  if (prevResult) config["prevResult"] = relabel(*prevResult, cniVersion);
  return config;
}

nlohmann::json CniNode::pluginConfig(const std::string& cniVersion,
                                     const nlohmann::json& pluginKeys,
                                     const std::optional<nlohmann::json>& prevResult,
                                     const std::vector<PortMapping>& mappings) const {
  nlohmann::json config = {
      {"cniVersion", cniVersion},
      {"name", networkName_},
      {"type", std::filesystem::path(pluginPath_).filename().string()},
  };
  // Standalone unless a test brings an agent: portmap-parity tests need none.
  if (config["type"] == "hostport") {
    config["agentSocket"] = "";
    // Agent mode writes attachment records and release notes: never in the machine's own dirs.
    config["stateDir"] = (std::filesystem::path(dir_.path()) / "cni-state").string();
    config["releaseSpool"] = (std::filesystem::path(dir_.path()) / "released").string();
  }
  for (const auto& [key, value] : pluginKeys.items()) config[key] = value;
  if (prevResult) config["prevResult"] = *prevResult;
  if (!mappings.empty()) config["runtimeConfig"]["portMappings"] = toJson(mappings);
  return config;
}

Result<CommandResult> CniNode::invoke(const std::string& path, const std::string& verb,
                                      const Pod& pod, const std::string& stdinText, bool withNetns,
                                      const std::map<std::string, std::string>& env) const {
  Command command{
      .argv = {path},
      .env = {{"PATH", kSearchPath},
              {"CNI_COMMAND", verb},
              {"CNI_CONTAINERID", pod.containerId},
              {"CNI_NETNS", withNetns ? pod.netns.path() : ""},
              {"CNI_IFNAME", pod.ifname},
              {"CNI_PATH", kReferencePluginDir},
              {"CNI_ARGS",
               "K8S_POD_INFRA_CONTAINER_ID=" + pod.containerId + ";K8S_POD_UID=" + pod.uid +
                   ";IgnoreUnknown=1;K8S_POD_NAMESPACE=default;K8S_POD_NAME=" + pod.label}},
      .stdinData = stdinText,
      .netnsPath = node_.path(),
  };
  for (const auto& [key, value] : env) {
    if (key.starts_with("-")) {
      command.env.erase(key.substr(1));
    } else {
      command.env[key] = value;
    }
  }
  return runCommand(command);
}

Result<CommandResult> CniNode::invokePlugin(const std::string& verb, const Pod& pod,
                                            const std::string& stdinText,
                                            const std::map<std::string, std::string>& env) const {
  return invoke(pluginPath_, verb, pod, stdinText, true, env);
}

Result<void> CniNode::bridgeUp(Pod& pod, const std::string& cniVersion) {
  if (!pod.bridgeResult.is_null()) return {};
  const std::string bridgePath = std::string(kReferencePluginDir) + "/bridge";
  HOSTPORT_TRY(const CommandResult bridged,
               invoke(bridgePath, "ADD", pod,
                      bridgeConfig(bridgeVersionFor(cniVersion), std::nullopt).dump(), true, {}));
  if (!bridged.ok()) {
    return fail(ErrorCode::kInternal, "bridge ADD for " + pod.label + ": " + bridged.describe());
  }
  auto result = nlohmann::json::parse(bridged.out, nullptr, false);
  if (!result.is_object()) {
    return fail(ErrorCode::kDecode, "bridge ADD printed no JSON object: " + bridged.out);
  }
  pod.bridgeResult = result;
  for (const auto& ip : result.value("ips", nlohmann::json::array())) {
    const std::string address = withoutPrefixLength(ip.value("address", ""));
    std::string& slot = address.find(':') == std::string::npos ? pod.ipv4 : pod.ipv6;
    if (slot.empty()) slot = address;
  }
  return {};
}

Result<CommandResult> CniNode::add(Pod& pod, const AddOptions& options) {
  HOSTPORT_TRY_VOID(bridgeUp(pod, options.cniVersion));
  pod.lastAdd = options;
  auto added = invoke(
      pluginPath_, "ADD", pod,
      pluginConfig(options.cniVersion, options.pluginKeys, pod.bridgeResult, options.mappings)
          .dump(),
      true, {});
  if (added && added->ok()) {
    auto cached = nlohmann::json::parse(added->out, nullptr, false);
    pod.cachedResult = cached.is_discarded() ? nlohmann::json() : cached;
  }
  return added;
}

Result<CommandResult> CniNode::delPlugin(Pod& pod, const DelOptions& options) {
  std::optional<nlohmann::json> prevResult;
  if (options.withPrevResult && compareCniVersions(options.cniVersion, "0.4.0") >= 0) {
    if (!pod.cachedResult.is_null()) prevResult = pod.cachedResult;
  }
  const auto& mappings =
      options.withRuntimeConfig ? pod.lastAdd.mappings : std::vector<PortMapping>{};
  return invoke(
      pluginPath_, "DEL", pod,
      pluginConfig(options.cniVersion, pod.lastAdd.pluginKeys, prevResult, mappings).dump(),
      options.withNetns, {});
}

Result<CommandResult> CniNode::del(Pod& pod, const DelOptions& options) {
  HOSTPORT_TRY(CommandResult deleted, delPlugin(pod, options));
  std::optional<nlohmann::json> prevResult;
  const std::string bridgeVersion = bridgeVersionFor(options.cniVersion);
  if (options.withPrevResult && compareCniVersions(bridgeVersion, "0.4.0") >= 0 &&
      !pod.cachedResult.is_null()) {
    prevResult = pod.cachedResult;
  }
  const std::string bridgePath = std::string(kReferencePluginDir) + "/bridge";
  HOSTPORT_TRY(const CommandResult bridged,
               invoke(bridgePath, "DEL", pod, bridgeConfig(bridgeVersion, prevResult).dump(),
                      options.withNetns, {}));
  if (!bridged.ok()) {
    return fail(ErrorCode::kInternal, "bridge DEL for " + pod.label + ": " + bridged.describe());
  }
  pod.bridgeResult = nlohmann::json();
  pod.cachedResult = nlohmann::json();
  return deleted;
}

Result<CommandResult> CniNode::check(Pod& pod, const std::string& cniVersion) {
  const std::string bridgePath = std::string(kReferencePluginDir) + "/bridge";
  HOSTPORT_TRY(
      const CommandResult bridged,
      invoke(bridgePath, "CHECK", pod,
             bridgeConfig(bridgeVersionFor(cniVersion), pod.cachedResult).dump(), true, {}));
  if (!bridged.ok()) {
    return fail(ErrorCode::kInternal, "bridge CHECK for " + pod.label + ": " + bridged.describe());
  }
  return invoke(
      pluginPath_, "CHECK", pod,
      pluginConfig(cniVersion, pod.lastAdd.pluginKeys, pod.cachedResult, pod.lastAdd.mappings)
          .dump(),
      true, {});
}

}  // namespace hostport::test
