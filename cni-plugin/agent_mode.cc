// Agent mode: hostport-agent grants the ports and is the one writer of the table. Every lease it
// grants carries its forwarding record and has its forwards in place before the answer
// (docs/design.md, "Version skew"), so the plugin never writes the table here, except at a DEL
// the agent cannot take (removeWithoutAgent).

#include <chrono>

#include "agent/api/node_files.h"
#include "annotations/port_annotations.h"
#include "cni-plugin/agent_status.h"
#include "cni-plugin/attachment_mode.h"
#include "cni-plugin/port_authority.h"
#include "common/identifiers.h"
#include "common/json_fields.h"

namespace hostport::cni {
namespace {

class AgentMode : public AttachmentMode {
 public:
  using AttachmentMode::AttachmentMode;

  Result<void> add(const PluginConfig& config) override;
  Result<void> del(const PluginConfig& config) override;
  Result<void> status(const PluginConfig& config) override;
  Result<void> gc(const PluginConfig& config, const std::vector<AttachmentKey>& valid) override;

 protected:
  Result<std::vector<PortMapping>> granted(const PluginConfig& config) override;

 private:
  PortAuthority& authority(const PluginConfig& config) {
    if (!authority_) authority_ = invocation_.backends().portAuthority(config.agentSocket);
    return *authority_;
  }
  /// DEL's way when the agent cannot be asked: remove the forwards by key (from the attachment
  /// record ADD kept; by listing the owner's elements when there is none), then leave a durable
  /// release note, so the agent releases the lease at its next pass and never lays them out again.
  Result<void> removeWithoutAgent(const PluginConfig& config, const Error& why);

  std::unique_ptr<PortAuthority> authority_;
};

Result<void> AgentMode::add(const PluginConfig& config) {
  HOSTPORT_TRY(const auto target, invocation_.attachment(config, "ADD"));
  HOSTPORT_TRY(auto annotations, annotations::parsePortAnnotations(config.podAnnotations));
  HOSTPORT_TRY(const auto result, invocation_.result(config, target));
  if (!annotations.dynamics.empty() || !config.portMappings.empty()) {
    // Before the agent is asked: no port may be held for a pod it cannot reach.
    HOSTPORT_TRY_VOID(requireContainerAddress(target.addresses, invocation_.env().ifname));
    auto request = allocationRequestFor(invocation_.env(), config, std::move(annotations.dynamics),
                                        annotations.pool);
    request.forwarding = forwardingOf(config, target);
    request.sticky = annotations.sticky;
    HOSTPORT_TRY(const auto lease, authority(config).allocate(request));
    // A cache for a DEL while the agent is down; losing it only costs that DEL a listing.
    if (auto kept = agent::api::writeAttachmentRecord(config.stateDir, lease); !kept) {
      invocation_.log("warning: cannot keep the attachment record: " + kept.error().message);
    }
    invocation_.log("hostport-agent installed the forwards of " +
                    std::to_string(forwards::mappingsOf(lease).size()) + " port mapping(s)");
  }
  invocation_.print(result);
  return {};
}

Result<std::vector<PortMapping>> AgentMode::granted(const PluginConfig& config) {
  HOSTPORT_TRY(const auto lease, authority(config).get(invocation_.key()));
  if (lease) return forwards::mappingsOf(*lease);
  const auto annotated = annotations::parsePortAnnotations(config.podAnnotations);
  const bool asked = !config.portMappings.empty() || (annotated && !annotated->dynamics.empty());
  if (!asked) return std::vector<PortMapping>{};
  return fail(ErrorCode::kNotFound, "hostport-agent holds no lease for " + invocation_.key().str());
}

Result<void> AgentMode::removeWithoutAgent(const PluginConfig& config, const Error& why) {
  invocation_.log("warning: hostport-agent cannot release the lease (" + why.message +
                  "): removing the forwards here and leaving a release note in " +
                  config.releaseSpool);
  const AttachmentKey key = invocation_.key();
  auto record = agent::api::readAttachmentRecord(config.stateDir, key);
  if (!record) {
    invocation_.log("warning: ignoring the attachment record: " + record.error().message);
  }
  auto plan = record && *record && (*record)->forwarding
                  ? forwards::planOf(**record)
                  : Result<nft::AttachmentPlan>(fail(ErrorCode::kNotFound, "no record"));
  if (plan) {
    HOSTPORT_TRY(auto* tables, invocation_.ruleset());
    HOSTPORT_TRY_VOID(tables->removeExact(plan->rules));
    forwards::flushUdpConntrack(plan->udpHostPorts, invocation_.network(), invocation_);
    invocation_.log("removed " + std::to_string(plan->rules.forwards.size()) +
                    " forward(s) by key");
  } else {
    HOSTPORT_TRY_VOID(invocation_.removeOwned());
  }
  // The runtime retries a failed DEL: better than an agent that lays the forwards out again.
  HOSTPORT_TRY_VOID(agent::api::writeReleaseNote(config.releaseSpool, key));
  (void)agent::api::removeAttachmentRecord(config.stateDir, key);
  return {};
}

Result<void> AgentMode::del(const PluginConfig& config) {
  auto released = authority(config).release(invocation_.key());
  if (!released) return removeWithoutAgent(config, released.error());
  (void)agent::api::removeAttachmentRecord(config.stateDir, invocation_.key());
  return {};
}

Result<void> AgentMode::status(const PluginConfig& config) {
  return judgeAgentStatus(
      authority(config).ready(), config.stateDir, std::chrono::seconds(config.statusGraceSeconds),
      invocation_.backends().clock(),
      [this](const std::string& message) { invocation_.verbLog("STATUS", message); });
}

Result<void> AgentMode::gc(const PluginConfig& config, const std::vector<AttachmentKey>& valid) {
  if (const Problem problem = networkNameProblem(config.name)) {
    return invalidValue("name", nlohmann::json(config.name), *problem);
  }
  HOSTPORT_TRY(const auto released, authority(config).collectGarbage(config.name, valid));
  invocation_.verbLog("GC", "network " + config.name + ": " + std::to_string(valid.size()) +
                                " valid attachment(s), released " +
                                std::to_string(released.size()) + " lease(s)");
  return {};
}

}  // namespace

std::unique_ptr<AttachmentMode> agentMode(Invocation& invocation) {
  return std::make_unique<AgentMode>(invocation);
}

}  // namespace hostport::cni
