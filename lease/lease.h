#pragma once
// The allocation vocabulary shared by the core, the store, the API and the plugin. Plain values:
// no I/O, no locks.

#include <compare>
#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "common/error.h"
#include "common/ip_address.h"
#include "common/namespace_id.h"
#include "common/protocol.h"

namespace hostport {

/// What a port is asked for: tcpudp gives one number for both TCP and UDP.
enum class PortProtocol : uint8_t { kTcp, kUdp, kSctp, kTcpUdp };

std::string_view protocolName(PortProtocol protocol);
/// Case-insensitive "tcp", "udp", "sctp", "tcpudp"; kInvalidArgument naming the text otherwise.
Result<PortProtocol> parsePortProtocol(std::string_view text);
/// The kernel protocols a port of this kind occupies.
std::span<const Protocol> kernelProtocols(PortProtocol protocol);
/// The PortProtocol that occupies exactly `protocol`.
PortProtocol portProtocol(Protocol protocol);

/// Leases are keyed by attachment, never by pod name: one pod can have several interfaces and a
/// restarted sandbox is a new attachment. A hostNetwork pod has no sandbox of its own, so its one
/// lease is keyed by its UID: {"hostnetwork-<uid>", "host"}.
struct AttachmentKey {
  std::string containerId;
  std::string ifname;

  std::string str() const { return containerId + "/" + ifname; }
  /// The key of the hostNetwork pod `uid`'s lease.
  static AttachmentKey ofHostNetworkPod(std::string_view uid);
  /// The pod UID of a key ofHostNetworkPod() made; empty for any other key.
  std::string_view hostNetworkPodUid() const;
  friend auto operator<=>(const AttachmentKey&, const AttachmentKey&) = default;
};

struct PodIdentity {
  std::string namespaceName;
  std::string name;
  std::string uid;

  bool empty() const { return namespaceName.empty() && name.empty(); }
  friend bool operator==(const PodIdentity&, const PodIdentity&) = default;
};

/// An inclusive range of ports, "30000-32767" or "8080".
struct PortRange {
  uint16_t first = 0;
  uint16_t last = 0;

  uint32_t size() const { return static_cast<uint32_t>(last) - first + 1; }
  bool contains(uint32_t port) const { return port >= first && port <= last; }
  std::string str() const;
  static Result<PortRange> parse(std::string_view text);
  friend bool operator==(const PortRange&, const PortRange&) = default;
};

/// A dynamic port asked for by annotation: `rtp=20000-20009/udp` is name "rtp", containerPort
/// 20000, count 10, protocol udp. A count above one gets contiguous host ports.
struct DynamicPortRequest {
  std::string name;
  uint16_t containerPort = 0;
  uint16_t count = 1;
  PortProtocol protocol = PortProtocol::kTcp;
  friend bool operator==(const DynamicPortRequest&, const DynamicPortRequest&) = default;
};

/// A hostPort from the pod spec: verified and recorded, never moved.
struct StaticPortClaim {
  uint16_t hostPort = 0;
  uint16_t containerPort = 0;
  PortProtocol protocol = PortProtocol::kTcp;
  std::optional<IpAddress> hostIp;  // none: every address
  friend bool operator==(const StaticPortClaim&, const StaticPortClaim&) = default;
};

/// How a lease's ports reach its pod, recorded at ADD so that the agent can lay its forwards out
/// again at any time (after a crash, a flushed table, a reboot) without asking the plugin.
struct Forwarding {
  std::string network;            // the CNI network name: GC is scoped to it
  std::optional<IpPrefix> podV4;  // the pod's address and subnet on the attachment's interface
  std::optional<IpPrefix> podV6;
  bool snat = true;          // hairpin + localhost masquerade, route_localnet
  bool masqAll = false;      // masquerade every forwarded connection
  std::string conditionsV4;  // validated nft match text (nft::validateConditions), or empty
  std::string conditionsV6;
  friend bool operator==(const Forwarding&, const Forwarding&) = default;
};

/// The network namespace a sandbox had at ADD. Its path gone, or naming another namespace (a
/// different inode: paths are reused), means the sandbox is gone.
using NetnsId = NamespaceId;

inline constexpr std::string_view kDefaultPool = "default";

struct AllocationRequest {
  AttachmentKey key;
  PodIdentity pod;
  std::string netns;
  std::string pool;  // empty: "default"
  std::vector<StaticPortClaim> statics;
  std::vector<DynamicPortRequest> dynamics;
  /// How the ports reach the pod: the agent lays the forwards out from it (the plugin always sends
  /// it). Absent: nothing is forwarded, the lease only holds its ports (a load generator's).
  std::optional<Forwarding> forwarding;
  /// Not sent: the agent fills it in from the netns path when the request arrives.
  NetnsId netnsId;

  /// The pool asked for, "default" when none was named.
  std::string_view poolName() const { return pool.empty() ? kDefaultPool : std::string_view(pool); }
  /// False (annotation hostport.io/sticky: "false"): the pod is not offered the ports it had last
  /// time, and what was remembered of it is forgotten (agent/core/sticky_memory.h).
  bool sticky = true;
};

/// One granted row of a lease: hostPort..hostPort+count-1 forward to
/// containerPort..containerPort+count-1; containerPort 0 for a hostNetwork pod's row, which
/// forwards nowhere (its process binds the host ports).
struct PortGrant {
  std::string name;  // the request's name; empty for a static claim
  PortProtocol protocol = PortProtocol::kTcp;
  uint16_t hostPort = 0;
  uint16_t containerPort = 0;
  uint16_t count = 1;
  std::optional<IpAddress> hostIp;
  bool isStatic = false;

  /// "30000->80/tcp", "20000-20009->5000-5009/udp", "[fd00::1]:8080->80/tcp", and "41000/udp"
  /// for a hostNetwork pod's: the ports as an operator reads them (hostportctl, the agent's log),
  /// without the name.
  std::string str() const;
  /// The host ports it holds, first to last: "30001", or "20000-20009" for a range.
  PortRange hostPorts() const { return {hostPort, static_cast<uint16_t>(hostPort + count - 1)}; }
  friend bool operator==(const PortGrant&, const PortGrant&) = default;
};

struct Lease {
  AttachmentKey key;
  PodIdentity pod;
  std::string netns;
  std::string pool;
  std::vector<PortGrant> ports;
  std::optional<Forwarding> forwarding;  // absent: nothing is forwarded (see above)
  NetnsId netnsId;                       // unknown: liveness is not checked
  bool sticky = true;                    // the request's: false, the pod opted out of sticky ports

  friend bool operator==(const Lease&, const Lease&) = default;
};

inline constexpr std::size_t kMaxPortsPerRequest = 256;  // rows, static and dynamic together
inline constexpr uint16_t kMaxRangeWidth = 1024;         // ports in one contiguous request

}  // namespace hostport
