// Standalone mode (agentSocket ""): no agent, no leases. The static portMappings are forwarded as
// asked, and the plugin is the one writer of its attachments' forwards, as portmap is.

#include "annotations/port_annotations.h"
#include "cni-plugin/attachment_mode.h"

namespace hostport::cni {
namespace {

class StandaloneMode : public AttachmentMode {
 public:
  using AttachmentMode::AttachmentMode;

  Result<void> add(const PluginConfig& config) override;
  Result<void> del(const PluginConfig& config) override;
  /// Always ready: there is nothing to wait for.
  Result<void> status(const PluginConfig&) override { return {}; }
  /// Nothing: the table's elements name their attachment but not their network, so GC of one
  /// network cannot tell its own from another's; libcni runs DEL for every cached attachment
  /// missing from the list before GC anyway.
  Result<void> gc(const PluginConfig&, const std::vector<AttachmentKey>&) override { return {}; }

 protected:
  Result<std::vector<PortMapping>> granted(const PluginConfig& config) override {
    return config.portMappings;
  }
};

Result<void> StandaloneMode::add(const PluginConfig& config) {
  HOSTPORT_TRY(const auto target, invocation_.attachment(config, "ADD"));
  HOSTPORT_TRY(const auto annotations, annotations::parsePortAnnotations(config.podAnnotations));
  if (!annotations.dynamics.empty() || !annotations.pool.empty()) {
    return fail(ErrorCode::kInvalidArgument,
                "annotations hostport.io/ports and hostport.io/pool need hostport-agent, but "
                "this network runs hostport standalone (agentSocket is \"\")");
  }
  HOSTPORT_TRY(const auto result, invocation_.result(config, target));
  if (!config.portMappings.empty()) {
    HOSTPORT_TRY_VOID(requireContainerAddress(target.addresses, invocation_.env().ifname));
    HOSTPORT_TRY(const auto planned, invocation_.plan(config, target, config.portMappings));
    HOSTPORT_TRY_VOID(invocation_.install(planned));
  }
  invocation_.print(result);
  return {};
}

// CNI hands DEL the config and prevResult ADD had, so the forwards ADD installed are planned
// again and removed by key where they carry this owner (Ruleset::removeIfOwned): the attachment's
// own elements at any N, where a listing walks all of them. Without a prevResult or port
// mappings to plan from, it lists (removeOwned). A config whose mappings changed since ADD would
// leave the old ones behind; the runtime passes the cached one.
Result<void> StandaloneMode::del(const PluginConfig& config) {
  auto target = invocation_.attachment(config, "DEL");
  if (!target || config.portMappings.empty()) return invocation_.removeOwned();
  auto planned =
      nft::planAttachment(target->owner, config.portMappings, podTarget(config, *target));
  if (!planned) return invocation_.removeOwned();
  HOSTPORT_TRY(auto* tables, invocation_.ruleset());
  HOSTPORT_TRY(const auto removed, tables->removeIfOwned(planned->rules));
  invocation_.settleRemoved(removed);
  return {};
}

}  // namespace

std::unique_ptr<AttachmentMode> standaloneMode(Invocation& invocation) {
  return std::make_unique<StandaloneMode>(invocation);
}

}  // namespace hostport::cni
