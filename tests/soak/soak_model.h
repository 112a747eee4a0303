#pragma once
// What the soak knows about its pods, and what it therefore expects of the agent (docs/soak.md).
//
// A pod is a sandbox of the simulated node (tests/support/cni_node.h) with small servers on its
// container ports. Its state is what the runtime knows from the plugin's answers:
// - kLive: ADD answered success; the ports are the attachment record the plugin kept (the
//   agent's answer). The agent must hold exactly that lease, at every check, across every kill.
// - kAddFailed, kDeleting: ADD failed, or a DEL failed and is tried again; the lease may or may
//   not exist (an answer lost in a kill), either is fine until the DEL succeeds.
// - kDeleted: DEL answered success: the lease and its elements must be gone within the repair
//   grace (a DEL made while the agent was down waits in the release spool for the next pass).
// - kVanished: the netns was removed without DEL: the agent must release the lease within the
//   vanished grace, counted from the removal or the agent's last start, whichever is later.
// A pod leaves the model once a check saw no lease for it after kDeleted: only then are its
// static port and its addresses free for another pod.

#include <chrono>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "lease/lease.h"
#include "tests/support/cni_node.h"
#include "tests/support/traffic.h"

namespace hostport::soak {

using Clock = std::chrono::steady_clock;

enum class PodState { kLive, kAddFailed, kDeleting, kDeleted, kVanished };

inline const char* stateName(PodState state) {
  switch (state) {
    case PodState::kLive:
      return "live";
    case PodState::kAddFailed:
      return "add_failed";
    case PodState::kDeleting:
      return "deleting";
    case PodState::kDeleted:
      return "deleted";
    case PodState::kVanished:
      return "vanished";
  }
  return "?";
}

struct SoakPod {
  test::Pod* pod = nullptr;  // owned by the CniNode
  std::string key;           // "containerId/ifname", the owner tag of its elements
  PodState state = PodState::kAddFailed;
  std::vector<PortGrant> acked;  // kLive: the ports ADD acknowledged
  std::vector<std::unique_ptr<test::Server>> servers;
  uint16_t staticPort = 0;    // a port of the static range this pod holds in the model
  bool probe = false;         // ADD claims a static port a live pod holds: must be refused (101)
  Clock::time_point since;    // kDeleted: when DEL succeeded; kVanished: when the netns went
  Clock::time_point retryAt;  // kAddFailed, kDeleting: the next DEL not before this
  bool busy = false;          // a worker is running a CNI verb for it
  bool released = false;      // kVanished: a check saw the lease gone; the late DEL may run
};

/// The reply id a pod's server gives: "<label>:<containerPort>/<tcp|udp>".
inline std::string serverId(const std::string& label, uint16_t port, test::Transport transport) {
  return label + ":" + std::to_string(port) +
         (transport == test::Transport::kTcp ? "/tcp" : "/udp");
}

}  // namespace hostport::soak
