#pragma once
// A simulated Kubernetes node for CNI plugin tests, built from network namespaces:
//
//   outside netns                node netns                              pod netns (one per pod)
//   hp1 192.0.2.100/24  <-veth->  hp0 192.0.2.1/24 (+ .2)     bridge <-veth-> eth0 10.88.0.x/24
//       192.0.2.101/24                2001:db8::1/64 (+ ::2)  10.88.0.1       fd00:88::x/64 (v6
//       pods) 2001:db8::100/64          the plugins run here
//
// The outside netns is a client on the node's LAN: its traffic enters through the node's
// prerouting hook like a real remote client's. Plugins run as a runtime runs a conflist
// (`bridge` with host-local IPAM in a private dataDir, then the plugin under test with prevResult
// and runtimeConfig.portMappings), executed inside the node netns. Everything lives in the
// namespaces and one temp dir, and goes away with the CniNode.

#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "common/error.h"
#include "tests/support/netns.h"
#include "tests/support/subprocess.h"
#include "tests/support/temp_dir.h"

namespace hostport::test {

inline constexpr const char* kNodeIpV4 = "192.0.2.1";
inline constexpr const char* kSecondNodeIpV4 = "192.0.2.2";
inline constexpr const char* kOutsideIpV4 = "192.0.2.100";
inline constexpr const char* kSecondOutsideIpV4 = "192.0.2.101";
inline constexpr const char* kNodeIpV6 = "2001:db8::1";
inline constexpr const char* kSecondNodeIpV6 = "2001:db8::2";
inline constexpr const char* kOutsideIpV6 = "2001:db8::100";
inline constexpr const char* kPodSubnetV4 = "10.88.0.0/24";
inline constexpr const char* kPodGatewayV4 = "10.88.0.1";
inline constexpr const char* kPodSubnetV6 = "fd00:88::/64";
inline constexpr const char* kNewestCniVersion = "1.1.0";
/// The newest version Debian's bridge and host-local (1.1.1) speak.
inline constexpr const char* kBridgeMaxCniVersion = "1.0.0";

/// The plugin under test: $HOSTPORT_TEST_PLUGIN when set (for example /usr/lib/cni/portmap, to
/// validate the harness against the reference plugin), else `builtPath`.
std::string pluginUnderTest(const std::string& builtPath);

/// The cniVersion tests use unless they ask for one: $HOSTPORT_TEST_CNI_VERSION when set (1.0.0
/// for the reference portmap, which predates 1.1.0), else kNewestCniVersion.
std::string defaultCniVersion();

/// One runtimeConfig.portMappings entry. `hostIp` empty means "any".
struct PortMapping {
  int hostPort = 0;
  int containerPort = 0;
  std::string protocol = "tcp";
  std::string hostIp;
};
nlohmann::json toJson(const std::vector<PortMapping>& mappings);

/// A CNI error reply on stdout.
struct CniError {
  std::string cniVersion;
  int code = 0;
  std::string msg;
  std::string details;
};
/// Parses a failed plugin's stdout; an error when it is not a CNI error object.
Result<CniError> parseCniError(const std::string& out);

/// What the plugin under test is given besides prevResult and the port mappings.
struct AddOptions {
  std::vector<PortMapping> mappings;
  nlohmann::json pluginKeys = nlohmann::json::object();  // snat, masqAll, conditionsV4, ...
  std::string cniVersion = defaultCniVersion();
};

struct DelOptions {
  std::string cniVersion = defaultCniVersion();
  bool withPrevResult = true;  // libcni sends the cached result from 0.4.0 on
  bool withNetns = true;       // false: CNI_NETNS="" as containerd's second DEL
  bool withRuntimeConfig = true;
};

/// A pod sandbox: its netns and the attachment's identity. Filled in by CniNode::add.
struct Pod {
  std::string label;  // for messages and server ids: "pod-a"
  Netns netns;
  std::string containerId;  // 64 hex characters, like containerd's
  std::string ifname = "eth0";
  std::string uid;   // K8S_POD_UID: fixed for the pod's life, as the kubelet's
  std::string ipv4;  // from bridge's result, without the prefix length
  std::string ipv6;
  nlohmann::json bridgeResult;  // prevResult for the plugin under test
  nlohmann::json cachedResult;  // the chain's final result (what libcni caches), for DEL/CHECK
  AddOptions lastAdd;           // the runtime config DEL and CHECK repeat

  std::string owner() const { return containerId + "/" + ifname; }
};

class CniNode {
 public:
  /// Builds the node, outside and veth; `pluginPath` is the plugin under test. With `ipv6`,
  /// pods also get an address from kPodSubnetV6.
  static Result<std::unique_ptr<CniNode>> create(std::string pluginPath, bool ipv6 = false);
  CniNode(const CniNode&) = delete;
  CniNode& operator=(const CniNode&) = delete;
  ~CniNode();

  const Netns& node() const { return node_; }
  const Netns& outside() const { return outside_; }
  const std::string& bridge() const { return bridge_; }
  const std::string& pluginPath() const { return pluginPath_; }
  const std::string& dir() const { return dir_.path(); }

  /// A new pod netns (lo up) with a fresh container ID; no plugin has run yet.
  Result<Pod*> createPod(const std::string& label);

  /// Runs `bridge` ADD alone (once per pod): the pod's network is up, the plugin under test has
  /// not run. Fills in bridgeResult and the pod's addresses.
  Result<void> bridgeUp(Pod& pod, const std::string& cniVersion = defaultCniVersion());
  /// Runs `bridge` ADD for the pod (unless its network is already up) and then the plugin under
  /// test's ADD. The harness error is for a bridge failure; the plugin's own outcome is the
  /// CommandResult. On success the pod's cachedResult is the plugin's stdout.
  Result<CommandResult> add(Pod& pod, const AddOptions& options);
  /// Runs only the plugin under test's DEL: the pod keeps its network, so a test can see that
  /// the plugin (and not bridge) stopped the traffic. Given the stdin of the last add().
  Result<CommandResult> delPlugin(Pod& pod, const DelOptions& options = {});
  /// The chain's DEL: the plugin under test's, then bridge's (the reverse order of ADD).
  Result<CommandResult> del(Pod& pod, const DelOptions& options = {});
  /// The chain's CHECK (bridge's, then the plugin under test's) with the cached result and the
  /// stdin of the last add().
  Result<CommandResult> check(Pod& pod, const std::string& cniVersion = defaultCniVersion());

  /// The stdin libcni would give the plugin under test: {"cniVersion","name","type",<keys>,
  /// "prevResult"?, "runtimeConfig"?}.
  nlohmann::json pluginConfig(const std::string& cniVersion, const nlohmann::json& pluginKeys,
                              const std::optional<nlohmann::json>& prevResult,
                              const std::vector<PortMapping>& mappings) const;
  /// Runs the plugin under test once in the node netns with raw stdin. `env` entries override
  /// (or, with an empty value under a "-" prefixed key, remove) the runtime-like defaults.
  Result<CommandResult> invokePlugin(const std::string& verb, const Pod& pod,
                                     const std::string& stdinText,
                                     const std::map<std::string, std::string>& env = {}) const;

 private:
  CniNode(TempDir dir, Netns node, Netns outside, std::string pluginPath, bool ipv6);
  Result<void> setUp();
  nlohmann::json bridgeConfig(const std::string& cniVersion,
                              const std::optional<nlohmann::json>& prevResult) const;
  Result<CommandResult> invoke(const std::string& path, const std::string& verb, const Pod& pod,
                               const std::string& stdinText, bool withNetns,
                               const std::map<std::string, std::string>& env) const;

  TempDir dir_;
  Netns node_;
  Netns outside_;
  std::string pluginPath_;
  bool ipv6_ = false;
  std::string bridge_;
  std::string networkName_;
  std::vector<std::unique_ptr<Pod>> pods_;
};

/// The version to run `bridge` with when the chain runs at `cniVersion`.
std::string bridgeVersionFor(const std::string& cniVersion);

/// Numeric comparison of dotted versions: <0, 0, >0.
int compareCniVersions(const std::string& a, const std::string& b);

}  // namespace hostport::test
