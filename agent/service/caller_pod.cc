#include "agent/service/caller_pod.h"

#include <algorithm>

#include "agent/log/event_log.h"
#include "agent/service/netns_id.h"

namespace hostport::agent::service {
namespace {

using log::Component;
using log::Level;

std::string netnsText(const NetnsId& netns) { return "net:[" + std::to_string(netns.inode) + "]"; }

/// The live leases of a sandbox's namespace, which must be the caller's pod's alone.
std::expected<std::vector<Lease>, Refusal> sandboxLeases(const AgentService& service,
                                                         const SandboxCaller& caller) {
  std::vector<Lease> leases = service.leasesInNetns(caller.netns);
  // The kernel hands a freed namespace's inode to the next namespace made, and a lease outlives
  // its sandbox until the reconciler's grace has passed (or the agent, down, saw no DEL). Only a
  // lease whose recorded netns path still names this namespace is the caller's.
  std::erase_if(leases, [](const Lease& lease) {
    return netnsLiveness(sandboxOf(lease)) != NetnsLiveness::kAlive;
  });
  if (leases.empty()) return leases;
  const std::string& uid = leases.front().pod.uid;
  if (!std::ranges::all_of(leases, [&](const Lease& lease) { return lease.pod.uid == uid; })) {
    // Never another pod's data: two pods cannot share a live namespace, so this is state to
    // repair, not an answer to give.
    log::event(Component::kServer, Level::kWarn, "server.pod_ambiguous_network",
               {{"netns_inode", caller.netns.inode}, {"leases", leases.size()}});
    return std::unexpected(
        Refusal{kNoLease, "this network namespace holds leases of more than one pod"});
  }
  // A lease made without the runtime's K8S_POD_UID cannot be checked against the cgroup.
  if (caller.cgroupPod && !uid.empty() && *caller.cgroupPod != uid) {
    log::event(Component::kServer, Level::kWarn, "server.pod_identity_mismatch",
               {{"netns_inode", caller.netns.inode},
                {"cgroup_pod", *caller.cgroupPod},
                {"lease_pod", uid}});
    return std::unexpected(
        Refusal{kUnidentified, "the caller's cgroup is pod " + *caller.cgroupPod +
                                   "'s, but its network namespace holds another pod's lease"});
  }
  return leases;
}

}  // namespace

std::vector<Lease> podLeases(const AgentService& service, const std::string& podUid) {
  std::vector<Lease> leases = service.leasesOfPod(podUid);
  std::erase_if(leases, [](const Lease& lease) {
    return lease.netnsId.known() && netnsLiveness(sandboxOf(lease)) != NetnsLiveness::kAlive;
  });
  return leases;
}

std::expected<CallerPod, Refusal> callerPod(const server::ConnectionPeer& peer,
                                            const NetnsId& nodeNetns) {
  if (!peer.process) {
    return std::unexpected(Refusal{
        kUnidentified, "cannot identify the calling process: " + peer.process.error().message});
  }
  if (peer.volumePod) {
    if (peer.podUid && *peer.podUid && **peer.podUid != *peer.volumePod) {
      log::event(Component::kServer, Level::kWarn, "server.pod_identity_mismatch",
                 {{"volume_pod", *peer.volumePod}, {"cgroup_pod", **peer.podUid}});
      return std::unexpected(Refusal{kUnidentified, "the caller's cgroup is pod " + **peer.podUid +
                                                        "'s, but the socket it called is in pod " +
                                                        *peer.volumePod + "'s volume"});
    }
    return VolumeCaller{*peer.volumePod};
  }
  if (!peer.netns) {
    return std::unexpected(Refusal{
        kUnidentified,
        "cannot read the calling process's network namespace: " + peer.netns.error().message});
  }
  if (*peer.netns != nodeNetns) {
    // The cgroup only confirms here: a caller whose cgroups cannot be read is still its
    // namespace's pod.
    std::optional<std::string> cgroupPod;
    if (peer.podUid) cgroupPod = *peer.podUid;
    return SandboxCaller{*peer.netns, std::move(cgroupPod)};
  }
  if (!peer.podUid) {
    return std::unexpected(Refusal{
        kUnidentified, "the caller (pid " + peer.pidText() +
                           ") is in the node's network namespace, and its cgroups, which tell a "
                           "hostNetwork pod from a node process, cannot be read: " +
                           peer.podUid.error().message});
  }
  if (!*peer.podUid) {
    return std::unexpected(Refusal{
        kNodeNetwork, "the caller (pid " + peer.pidText() +
                          ") is in the node's network namespace and in no pod's cgroup: a node "
                          "process has no hostport lease; the pod socket answers pods only"});
  }
  return HostNetworkCaller{**peer.podUid};
}

std::expected<std::vector<Lease>, Refusal> leasesOf(const AgentService& service,
                                                    const CallerPod& caller) {
  if (const auto* sandbox = std::get_if<SandboxCaller>(&caller)) {
    return sandboxLeases(service, *sandbox);
  }
  if (const auto* volume = std::get_if<VolumeCaller>(&caller)) {
    return podLeases(service, volume->podUid);
  }
  const auto& pod = std::get<HostNetworkCaller>(caller);
  std::vector<Lease> leases;
  if (auto lease = service.get(AttachmentKey::ofHostNetworkPod(pod.podUid))) {
    leases.push_back(std::move(*lease));
  }
  return leases;
}

std::string describe(const CallerPod& caller) {
  if (const auto* sandbox = std::get_if<SandboxCaller>(&caller)) {
    return "network namespace " + netnsText(sandbox->netns);
  }
  if (const auto* volume = std::get_if<VolumeCaller>(&caller)) {
    return "pod " + volume->podUid + " (its hostport.io volume)";
  }
  return "hostNetwork pod " + std::get<HostNetworkCaller>(caller).podUid;
}

std::string whyNoLease(const CallerPod& caller) {
  if (std::holds_alternative<VolumeCaller>(caller)) {
    return "no hostport lease is the caller's, " + describe(caller) +
           ": the pod asks for no host ports, or its sandbox is not set up yet";
  }
  if (std::holds_alternative<SandboxCaller>(caller)) {
    return "no hostport lease holds the caller's " + describe(caller) +
           ": the pod asked for no host ports, or its sandbox is not set up yet";
  }
  return "no hostport lease is the caller's, " + describe(caller) +
         ": the pod asks for no host ports, the pool could not give them (its Events say why), "
         "or the agent has not seen the pod yet (it learns of hostNetwork pods from the API "
         "server, with watchPods on)";
}

}  // namespace hostport::agent::service
