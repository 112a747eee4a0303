#pragma once
// Which pod a pod-socket caller is, and which leases are its own, from what the kernel said at
// accept (server::ConnectionPeer); docs/design.md, "The pod socket".
//
// - A caller outside the node's network namespace is the pod whose sandbox that namespace is: the
//   leases that hold it, while their recorded netns path still names it. When its cgroup names a
//   pod too, that must be the leases' pod: a process put into one pod's namespace from another
//   pod's cgroup is refused rather than trusted by either.
// - A caller in the node's network namespace is a node process or a hostNetwork pod. Only the
//   pod's cgroup tells them apart (server::podUidOfCgroups()): a caller whose cgroup names pod U
//   reads the lease AttachmentKey::ofHostNetworkPod(U), which only the pod watch makes, for a
//   hostNetwork pod of that UID on this node. A caller in no pod's cgroup is a node process, and
//   is refused.
// - A caller of the socket in pod U's CSI volume (agent/csi) is pod U: only U's containers mount
//   the volume, and the node's root can reach everything anyway. It reads U's leases, whatever
//   network it is in (a hostNetwork pod's volume works the same), unless its cgroup names another
//   pod: a process that reached the socket some other way is refused.

#include <expected>
#include <optional>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

#include "agent/server/peer_process.h"
#include "agent/service/agent_service.h"

namespace hostport::agent::service {

/// The pod socket's refusals: 403 and a machine code a script can test, with the reason.
inline constexpr std::string_view kUnidentified = "unidentified_caller";
inline constexpr std::string_view kNodeNetwork = "node_network";
inline constexpr std::string_view kNoLease = "no_lease";

struct Refusal {
  std::string_view code;
  std::string message;
};

/// A pod with a sandbox of its own, known by its network namespace.
struct SandboxCaller {
  NetnsId netns;
  std::optional<std::string> cgroupPod;  // the pod the caller's cgroup names, if any
};

/// A hostNetwork pod, known by its cgroup.
struct HostNetworkCaller {
  std::string podUid;
};

/// A pod known by the CSI volume whose socket it called.
struct VolumeCaller {
  std::string podUid;
};

using CallerPod = std::variant<SandboxCaller, HostNetworkCaller, VolumeCaller>;

/// Which pod the caller at `peer` is; a Refusal when it could not be told or is no pod (a process
/// in `nodeNetns` and in no pod's cgroup).
std::expected<CallerPod, Refusal> callerPod(const server::ConnectionPeer& peer,
                                            const NetnsId& nodeNetns);

/// The caller's leases: none yet (an empty list), or a Refusal when what the agent holds
/// contradicts who the caller is (two pods' leases in one namespace, another pod's cgroup).
std::expected<std::vector<Lease>, Refusal> leasesOf(const AgentService& service,
                                                    const CallerPod& caller);

/// The live leases of the pod `podUid`: its sandboxes' whose netns path still names their
/// namespace (one per interface), and its hostNetwork lease. What its CSI volume holds.
std::vector<Lease> podLeases(const AgentService& service, const std::string& podUid);

/// The caller in the words of a refusal: "network namespace net:[4026532001]" or "hostNetwork pod
/// 1b4e28ba-...".
std::string describe(const CallerPod& caller);

/// Why the caller's lease is not there, for a refusal when it may not wait or its wait is over.
std::string whyNoLease(const CallerPod& caller);

}  // namespace hostport::agent::service
