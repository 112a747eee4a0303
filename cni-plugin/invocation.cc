#include "cni-plugin/invocation.h"

#include <ostream>

#include "cni-plugin/cni_version.h"
#include "nft/table_state.h"

namespace hostport::cni {

Result<nft::Ruleset*> Invocation::ruleset() {
  if (!ruleset_) {
    HOSTPORT_TRY(ruleset_, backends_.ruleset());
  }
  return ruleset_.get();
}

Result<hostnet::HostNetwork*> Invocation::hostNetwork() {
  if (!hostNetwork_) {
    HOSTPORT_TRY(hostNetwork_, backends_.hostNetwork());
  }
  return hostNetwork_.get();
}

void Invocation::log(const std::string& message) const {
  io_.err << "hostport " + std::string(verbName(env_.verb)) + " " + env_.containerId + "/" +
                 env_.ifname + ": " + message + "\n";
}

void Invocation::verbLog(std::string_view verb, const std::string& message) const {
  io_.err << "hostport " + std::string(verb) + ": " + message + "\n";
}

Result<Attachment> Invocation::attachment(const PluginConfig& config, std::string_view verb) const {
  if (!config.prevResult) {
    return fail(ErrorCode::kInvalidArgument,
                "prevResult is missing: hostport is a chained plugin and must follow the "
                "primary network plugin in a conflist (" +
                    std::string(verb) + ")");
  }
  HOSTPORT_TRY(auto ips, resultAddresses(*config.prevResult));
  HOSTPORT_TRY(auto addresses, containerAddresses(*config.prevResult, ips, env_.ifname));
  HOSTPORT_TRY(auto owner, nft::makeOwner(env_.containerId, env_.ifname));
  return Attachment{std::move(owner), std::move(addresses), std::move(ips)};
}

Result<nft::AttachmentPlan> Invocation::plan(const PluginConfig& config,
                                             const Attachment& attachment,
                                             const std::vector<PortMapping>& mappings) {
  HOSTPORT_TRY(auto planned,
               nft::planAttachment(attachment.owner, mappings, podTarget(config, attachment)));
  for (const auto& warning : planned.warnings) log(warning);
  HOSTPORT_TRY_VOID(nft::requireForwards(planned));
  return planned;
}

Result<void> Invocation::install(const nft::AttachmentPlan& plan) {
  if (plan.rules.empty()) return {};
  HOSTPORT_TRY_VOID(forwards::refuseNodeTargets(plan, network()));
  HOSTPORT_TRY(auto* tables, ruleset());
  HOSTPORT_TRY_VOID(forwards::writePlan(plan, *tables, network(), *this));
  log("installed " + std::to_string(plan.rules.forwards.size()) + " forward(s)");
  return {};
}

Result<void> Invocation::removeOwned() {
  // DEL must clean up whatever the config says: the owner comes from the environment alone.
  HOSTPORT_TRY(const auto owner, nft::makeOwner(env_.containerId, env_.ifname));
  HOSTPORT_TRY(auto* tables, ruleset());
  HOSTPORT_TRY(const auto removed, tables->remove(owner));
  settleRemoved(removed);
  return {};
}

void Invocation::settleRemoved(const nft::AttachmentRules& removed) {
  forwards::flushUdpConntrack(nft::udpHostPorts(removed.forwards), network(), *this);
  if (!removed.empty()) log("removed " + std::to_string(removed.forwards.size()) + " forward(s)");
}

Result<nlohmann::json> Invocation::result(const PluginConfig& config,
                                          const Attachment& attachment) const {
  return convertResult(*config.prevResult, attachment.resultAddresses, config.cniVersion);
}

void Invocation::print(const nlohmann::json& result) const {
  io_.out << result.dump(2, ' ', false, nlohmann::json::error_handler_t::replace) << "\n";
}

void Invocation::rollbackFailed(const Error& cause) {
  log("error: cannot roll back after a failed ADD: " + cause.message);
}

void Invocation::conntrackFlushFailed(uint16_t port, const Error& cause) {
  log("warning: cannot flush UDP conntrack for port " + std::to_string(port) + ": " +
      cause.message);
}

Forwarding forwardingOf(const PluginConfig& config, const Attachment& attachment) {
  return {config.name,    attachment.addresses.v4, attachment.addresses.v6, config.snat,
          config.masqAll, config.conditionsV4,     config.conditionsV6};
}

nft::PodTarget podTarget(const PluginConfig& config, const Attachment& attachment) {
  return forwards::podTargetOf(forwardingOf(config, attachment));
}

}  // namespace hostport::cni
