#pragma once
// One run of the plugin: its environment, its streams, and the kernel handles it opens when a
// verb first needs them. What both modes (attachment_mode.h) do alike lives here:
// reading the attachment from prevResult, planning, writing and removing forwards, answering.

#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "cni-plugin/cni_env.h"
#include "cni-plugin/dispatcher.h"
#include "cni-plugin/plugin_config.h"
#include "cni-plugin/prev_result.h"
#include "common/error.h"
#include "common/ip_address.h"
#include "forwards/lease_forwards.h"
#include "forwards/plan_writer.h"
#include "lease/lease.h"
#include "nft/attachment_plan.h"
#include "nft/ruleset.h"

namespace hostport::cni {

/// The attachment ADD and CHECK work on, read from prevResult.
struct Attachment {
  std::string owner;  // the owner tag of its elements: "containerID/ifname"
  ContainerAddresses addresses;
  std::vector<IpPrefix> resultAddresses;  // every prevResult.ips[].address, read once
};

/// What the agent needs to lay the attachment's forwards out (and out again) on its own; the
/// plugin plans from the same record in standalone mode, so both plan alike.
Forwarding forwardingOf(const PluginConfig& config, const Attachment& attachment);
/// The pod end of the attachment's forwards.
nft::PodTarget podTarget(const PluginConfig& config, const Attachment& attachment);

class Invocation : public forwards::WriteReport {
 public:
  Invocation(const PluginIo& io, const PluginBackends& backends, CniEnv env)
      : io_(io), backends_(backends), env_(std::move(env)) {}

  const CniEnv& env() const { return env_; }
  const PluginBackends& backends() const { return backends_; }
  AttachmentKey key() const { return {env_.containerId, env_.ifname}; }
  /// True once the table's handle was opened (and may have deleted elements).
  bool openedTable() const { return ruleset_ != nullptr; }

  /// Everything ADD and CHECK need before anyone is asked for ports; `verb` names the caller in
  /// the error for a missing prevResult.
  Result<Attachment> attachment(const PluginConfig& config, std::string_view verb) const;
  /// The forwards of `mappings` to the attachment; a warning per mapping a family skips, and
  /// kInvalidArgument when none can be forwarded.
  Result<nft::AttachmentPlan> plan(const PluginConfig& config, const Attachment& attachment,
                                   const std::vector<PortMapping>& mappings);
  /// Writes a new attachment's plan (refusing a target the node holds), all or nothing.
  Result<void> install(const nft::AttachmentPlan& plan);
  /// Removes whatever carries this attachment's owner tag (a listing): the last resort.
  Result<void> removeOwned();
  /// After a removal: flushes UDP conntrack of the removed forwards' host ports, says how many.
  void settleRemoved(const nft::AttachmentRules& removed);
  /// ADD's answer: prevResult, converted to the config's version. Made before any port is
  /// granted, so a result that cannot be given leaves nothing behind.
  Result<nlohmann::json> result(const PluginConfig& config, const Attachment& attachment) const;
  void print(const nlohmann::json& result) const;

  Result<nft::Ruleset*> ruleset();
  forwards::HostNetworkAccess network() {
    return [this] { return hostNetwork(); };
  }
  /// One line on stderr naming the verb and the attachment. One write per line (stderr is
  /// unbuffered), so lines of concurrent plugins stay whole.
  void log(const std::string& message) const;
  /// The same for a verb that names no attachment (GC, STATUS).
  void verbLog(std::string_view verb, const std::string& message) const;

  // What writing a plan met without failing it: lines on stderr.
  void rollbackFailed(const Error& cause) override;
  void conntrackFlushFailed(uint16_t port, const Error& cause) override;

 private:
  Result<hostnet::HostNetwork*> hostNetwork();

  const PluginIo& io_;
  const PluginBackends& backends_;
  CniEnv env_;
  std::unique_ptr<nft::Ruleset> ruleset_;
  std::unique_ptr<hostnet::HostNetwork> hostNetwork_;
};

}  // namespace hostport::cni
