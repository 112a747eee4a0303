#pragma once
// Who grants host ports to an attachment. In production that is hostport-agent over its control
// socket; `PortAuthority` is the seam tests fake. Standalone mode (agentSocket "") has no
// authority: the static portMappings are forwarded as asked.

#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "cni-plugin/cni_env.h"
#include "cni-plugin/plugin_config.h"
#include "common/error.h"
#include "lease/lease.h"

namespace hostport::cni {

class PortAuthority {
 public:
  virtual ~PortAuthority() = default;
  /// The same key again returns the same lease.
  virtual Result<Lease> allocate(const AllocationRequest& request) = 0;
  virtual Result<std::optional<Lease>> get(const AttachmentKey& key) = 0;
  /// The lease released, or nullopt when there was none (which is success too). In agent mode
  /// the agent has removed the lease's forwards by then.
  virtual Result<std::optional<Lease>> release(const AttachmentKey& key) = 0;
  /// Succeeds when the authority is ready to grant ports.
  virtual Result<void> ready() = 0;
  /// CNI GC of `network`: releases its leases whose key is not in `valid`; returns them.
  virtual Result<std::vector<Lease>> collectGarbage(const std::string& network,
                                                    const std::vector<AttachmentKey>& valid) = 0;
};

/// The agent at `socketPath`; every call has the client's deadline, and an unreachable agent is
/// kUnavailable naming the path (CNI code 11).
std::unique_ptr<PortAuthority> agentPortAuthority(const std::string& socketPath);

/// The request for one ADD: static claims from portMappings, dynamic ones from the annotations,
/// and the pod's identity from CNI_ARGS.
AllocationRequest allocationRequestFor(const CniEnv& env, const PluginConfig& config,
                                       std::vector<DynamicPortRequest> dynamics, std::string pool);

}  // namespace hostport::cni
