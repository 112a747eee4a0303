#pragma once
// The network configuration on stdin: our options, the runtime's capability arguments and the
// previous plugin's result.

#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "agent/api/json_codec.h"
#include "agent/api/node_files.h"
#include "common/error.h"
#include "common/ip_address.h"
#include "common/protocol.h"
#include "lease/lease.h"
#include "nft/attachment_plan.h"
#include "nft/forward.h"

namespace hostport::cni {

inline constexpr uint32_t kDefaultStatusGraceSeconds = 30;
/// The most the plugin reads of stdin. A conflist is kilobytes, but the input of a GC holds two
/// lists of attachments (parseValidAttachments) that may each hold agent::api::kMaxGcKeys of the
/// longest keys, which the agent then takes in one request (api::kMaxRequestBytes).
inline constexpr std::size_t kMaxConfigBytes =
    (4 << 20) + 2 * agent::api::kMaxGcKeys * agent::api::kMaxGcKeyJsonBytes;

/// One entry of runtimeConfig.portMappings: absent, "" and unspecified hostIP addresses (0.0.0.0,
/// ::) read as any.
using PortMapping = nft::PortMapping;

struct PluginConfig {
  std::string cniVersion;
  std::string name;
  bool snat = true;          // hairpin + localhost masquerade, route_localnet
  bool masqAll = false;      // masquerade every forwarded connection
  std::string conditionsV4;  // validated nft match text (nft::validateConditions)
  std::string conditionsV6;
  /// `staticPorts: false`: portmap, earlier in the chain, serves the pod spec's hostPorts, so
  /// runtimeConfig.portMappings are ignored (neither allocated nor forwarded) and only the
  /// annotation ports are ours; no hostPort gets two DNATs. Default true.
  bool staticPorts = true;
  std::vector<PortMapping> portMappings;     // empty when !staticPorts
  std::optional<nlohmann::json> prevResult;  // absent when the key is missing or null
  /// runtimeConfig["io.kubernetes.cri.pod-annotations"]; an empty object when absent or null.
  nlohmann::json podAnnotations = nlohmann::json::object();
  /// The agent's control socket (`agentSocket`): absent means agent::api::kDefaultAgentSocket, ""
  /// means standalone (static hostPorts only, no agent).
  std::string agentSocket;
  /// STATUS fails only once the agent has been unreachable for longer than this
  /// (`statusGraceSeconds`, 0..86400); 0 fails at the first unreachable call (agent_status.h).
  uint32_t statusGraceSeconds = kDefaultStatusGraceSeconds;
  /// The plugin's small files on the node (`stateDir`, an absolute path): attachment records
  /// (agent/api/node_files.h), so that a DEL while the agent is down can remove the forwards by
  /// key, and STATUS's agent-unreachable-since record.
  std::string stateDir = std::string(agent::api::kDefaultRecordDir);
  /// Agent mode: where a DEL made while the agent is down leaves its release note.
  std::string releaseSpool = std::string(agent::api::kDefaultReleaseSpool);
  nlohmann::json raw;  // the whole document, for GC's attachment lists and the like
};

/// Parses stdin without throwing. Errors name the field and the value:
///  - kDecode: not JSON, or not an object;
///  - kInvalidArgument: a missing or non-string cniVersion; a wrong type for snat/masqAll/
///    conditionsV4/conditionsV6/agentSocket/stateDir/staticPorts; bad conditions; a stateDir that
///    is not an absolute path; a statusGraceSeconds that is not an integer 0..86400;
///  - kInvalidArgument for portMappings: not an array (null counts as empty), an entry that is
///    not an object, hostPort/containerPort missing, not an integer or outside 1..65535,
///    an unknown protocol (default "tcp"), a hostIP that is not an IP address.
/// portMappings keys are matched case-insensitively (containerd sends "HostPort").
/// The version itself is not checked here: the dispatcher does that per verb.
Result<PluginConfig> parsePluginConfig(std::string_view text);

/// GC's valid attachments: the union of `cni.dev/valid-attachments` and `cni.dev/attachments`
/// (libcni sends both, the second being the spec's earlier name; absent and null are empty), each
/// entry {"containerID", "ifname"}. kInvalidArgument naming the entry's field and value for a
/// list that is not an array or holds more than kMaxGcKeys entries, an entry that is not an
/// object, or a key that breaks its grammar (common/identifiers.h).
Result<std::vector<AttachmentKey>> parseValidAttachments(const PluginConfig& config);

}  // namespace hostport::cni
