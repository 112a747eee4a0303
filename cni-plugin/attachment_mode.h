#pragma once
// What differs between the plugin's two modes, one implementation each, picked once per run by
// the config's agentSocket:
//   - agent mode (agent_mode.cc): hostport-agent grants the ports and is the one writer of the
//     table; the plugin asks and answers.
//   - standalone (standalone_mode.cc, agentSocket ""): the static portMappings are forwarded as
//     asked, and the plugin writes and removes them itself.
// CHECK compares the table with what was granted in the same way in both (check()); the rest is
// the mode's.

#include <memory>
#include <vector>

#include "cni-plugin/invocation.h"
#include "cni-plugin/plugin_config.h"
#include "common/error.h"
#include "lease/lease.h"

namespace hostport::cni {

class AttachmentMode {
 public:
  explicit AttachmentMode(Invocation& invocation) : invocation_(invocation) {}
  virtual ~AttachmentMode() = default;
  AttachmentMode(const AttachmentMode&) = delete;
  AttachmentMode& operator=(const AttachmentMode&) = delete;

  /// Grants the attachment's ports, puts their forwards in place and answers; no partial state
  /// on failure.
  virtual Result<void> add(const PluginConfig& config) = 0;
  /// Takes the attachment's forwards down and frees its ports.
  virtual Result<void> del(const PluginConfig& config) = 0;
  /// Whether ADDs can be taken now.
  virtual Result<void> status(const PluginConfig& config) = 0;
  /// Frees what the network holds for attachments not in `valid`.
  virtual Result<void> gc(const PluginConfig& config, const std::vector<AttachmentKey>& valid) = 0;

  /// CHECK: the table holds exactly the forwards of what was granted (granted()); the first
  /// difference as kNotFound.
  Result<void> check(const PluginConfig& config);

 protected:
  /// The mappings the attachment was granted: none when it asked for none, kNotFound when it
  /// asked and holds nothing.
  virtual Result<std::vector<PortMapping>> granted(const PluginConfig& config) = 0;

  Invocation& invocation_;
};

/// Agent mode: the agent at the config's agentSocket, through the backends' PortAuthority (made
/// when first needed, so a verb that fails before never connects).
std::unique_ptr<AttachmentMode> agentMode(Invocation& invocation);
/// Standalone mode.
std::unique_ptr<AttachmentMode> standaloneMode(Invocation& invocation);

}  // namespace hostport::cni
