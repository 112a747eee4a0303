#pragma once
// The verbs, with every outside dependency injected (env, stdin, stdout, stderr, the kernel),
// so tests run ADD/DEL/CHECK in-process against fakes. main.cc only wires the real ones.

#include <functional>
#include <iosfwd>
#include <memory>
#include <string_view>

#include "cni-plugin/agent_status.h"
#include "cni-plugin/cni_env.h"
#include "cni-plugin/port_authority.h"
#include "common/error.h"
#include "hostnet/host_network.h"
#include "nft/ruleset.h"

namespace hostport::cni {

struct PluginIo {
  std::function<const char*(const char*)> getenv;
  std::string_view stdinText;
  std::ostream& out;
  std::ostream& err;
};

/// Factories, so a verb that needs no kernel (VERSION, bad input) never opens a handle.
struct PluginBackends {
  std::function<Result<std::unique_ptr<nft::Ruleset>>()> ruleset;
  std::function<Result<std::unique_ptr<hostnet::HostNetwork>>()> hostNetwork;
  std::function<std::unique_ptr<PortAuthority>(const std::string& socketPath)> portAuthority;
  /// STATUS's clock (agent_status.h); tests move it by hand.
  std::function<BootInstant()> clock = bootClockNow;
  /// What CNI_NETNS names (cni_env.h); main.cc asks the kernel (hostnet/network_namespace.h).
  NetnsCheck netnsCheck;
  /// Called once a verb that opened the table has written its answer, with the exit code, while
  /// the kernel handles are still open: closing them would make this process wait for the kernel
  /// to free what a deletion (its own, or anyone's just before) deleted (detached_teardown.h).
  /// main.cc ends the process there; empty, runPlugin returns as usual.
  /// `stateDir` is the config's: where the netlink keeper lives (netlink_keeper.h).
  std::function<void(int exitCode, const std::string& stateDir)> exitBeforeTeardown;
};

/// Runs one invocation and returns the process exit code.
int runPlugin(const PluginIo& io, const PluginBackends& backends);

}  // namespace hostport::cni
