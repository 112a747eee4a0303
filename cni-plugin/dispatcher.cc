#include "cni-plugin/dispatcher.h"

#include <chrono>
#include <ostream>

#include "agent/api/node_files.h"
#include "agent/forwards/lease_forwards.h"
#include "agent/forwards/plan_writer.h"
#include "cni-plugin/annotations.h"
#include "cni-plugin/cni_env.h"
#include "cni-plugin/cni_error.h"
#include "cni-plugin/cni_version.h"
#include "cni-plugin/plugin_config.h"
#include "cni-plugin/prev_result.h"
#include "common/identifiers.h"
#include "common/json_fields.h"
#include "nft/attachment_plan.h"
#include "nft/table_state.h"

namespace hostport::cni {
namespace {

constexpr std::string_view kLatestVersion = "1.1.0";

/// What the agent needs to lay the attachment's forwards out (and out again) on its own.
agent::Forwarding forwardingOf(const PluginConfig& config, const ContainerAddresses& addresses) {
  return {config.name,    addresses.v4,        addresses.v6,       config.snat,
          config.masqAll, config.conditionsV4, config.conditionsV6};
}

/// The pod end of the forwards, as the agent would plan them from the same request.
nft::PodTarget podTarget(const PluginConfig& config, const ContainerAddresses& addresses) {
  return agent::forwards::podTargetOf(forwardingOf(config, addresses));
}

/// What an attachment is granted: the mappings to forward and, with an agent, its lease.
struct Grant {
  std::vector<PortMapping> mappings;
  bool leased = false;  // true when the agent holds a lease that a failed ADD must release
  /// True when the agent installed the forwards itself (agent mode); false when this plugin
  /// writes them (standalone, or an agent older than forwarding records).
  bool installedByAgent = false;
};

/// One invocation: its environment, config and the streams to answer on.
class Invocation : public agent::forwards::WriteReport {
 public:
  Invocation(const PluginIo& io, const PluginBackends& backends, CniEnv env)
      : io_(io), backends_(backends), env_(std::move(env)) {}

  Result<void> add(const PluginConfig& config);
  Result<void> del(const Result<PluginConfig>& config);
  Result<void> check(const PluginConfig& config);
  Result<void> status(const PluginConfig& config);
  Result<void> gc(const PluginConfig& config);

  /// True once the table's handle was opened (and may have deleted elements).
  bool openedTable() const { return ruleset_ != nullptr; }

 private:
  struct Attachment {
    std::string owner;
    ContainerAddresses addresses;
    std::vector<IpPrefix> resultAddresses;  // every prevResult.ips[].address, read once
  };
  /// Everything ADD and CHECK need before anyone is asked for ports.
  Result<Attachment> attachment(const PluginConfig& config, std::string_view verb) const;
  Result<Grant> grantPorts(const PluginConfig& config, const Attachment& attachment);
  Result<std::vector<PortMapping>> grantedMappings(const PluginConfig& config);
  Result<nft::AttachmentPlan> plan(const PluginConfig& config, const Attachment& attachment,
                                   const std::vector<PortMapping>& mappings);
  Result<void> install(const nft::AttachmentPlan& plan);
  void releaseLease(const PluginConfig& config);
  /// DEL's way when the agent cannot be asked: remove the forwards by key (from the attachment
  /// record ADD kept; by listing the owner's elements when there is none), then leave a durable
  /// release note, so the agent releases the lease at its next pass and never lays them out again.
  Result<void> removeWithoutAgent(const PluginConfig& config, const Error& why);
  /// Removes whatever carries this attachment's owner tag (a listing): the last resort.
  Result<void> removeOwned();
  /// Standalone DEL. CNI hands DEL the config and prevResult ADD had, so the forwards ADD
  /// installed are planned again and removed by key where they carry this owner
  /// (Ruleset::removeIfOwned): the attachment's own elements at any N, where a listing walks all
  /// of them. Without a prevResult or port mappings to plan from, it lists (removeOwned). A
  /// config whose mappings changed since ADD would leave the old ones behind; the runtime passes
  /// the cached one.
  Result<void> removeStandalone(const PluginConfig& config);
  /// After a removal that found what it removed: flushes UDP conntrack of those host ports and
  /// says how many forwards went.
  void settleRemoved(const nft::AttachmentRules& removed);
  PortAuthority& authority(const PluginConfig& config);
  Result<nft::Ruleset*> ruleset();
  Result<hostnet::HostNetwork*> hostNetwork();
  agent::forwards::HostNetworkAccess network() {
    return [this] { return hostNetwork(); };
  }
  // What writing a plan met without failing it: lines on stderr.
  void rollbackFailed(const Error& cause) override;
  void conntrackFlushFailed(uint16_t port, const Error& cause) override;
  agent::AttachmentKey key() const { return {env_.containerId, env_.ifname}; }
  // One write per line (stderr is unbuffered), so lines of concurrent plugins stay whole.
  void log(const std::string& message) const {
    io_.err << "hostport " + std::string(verbName(env_.verb)) + " " + env_.containerId + "/" +
                   env_.ifname + ": " + message + "\n";
  }

  const PluginIo& io_;
  const PluginBackends& backends_;
  CniEnv env_;
  std::unique_ptr<nft::Ruleset> ruleset_;
  std::unique_ptr<hostnet::HostNetwork> hostNetwork_;
  std::unique_ptr<PortAuthority> authority_;
};

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

PortAuthority& Invocation::authority(const PluginConfig& config) {
  if (!authority_) authority_ = backends_.portAuthority(config.agentSocket);
  return *authority_;
}

Result<Invocation::Attachment> Invocation::attachment(const PluginConfig& config,
                                                      std::string_view verb) const {
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

Result<Grant> Invocation::grantPorts(const PluginConfig& config, const Attachment& attachment) {
  HOSTPORT_TRY(auto annotations, parsePortAnnotations(config.podAnnotations));
  if (config.agentSocket.empty() && (!annotations.dynamics.empty() || !annotations.pool.empty())) {
    return fail(ErrorCode::kInvalidArgument,
                "annotations hostport.io/ports and hostport.io/pool need hostport-agent, but "
                "this network runs hostport standalone (agentSocket is \"\")");
  }
  if (annotations.dynamics.empty() && config.portMappings.empty()) return Grant{{}, false};
  // Before anyone is asked for a port: none may be held for a pod it cannot reach.
  HOSTPORT_TRY_VOID(requireContainerAddress(attachment.addresses, env_.ifname));
  if (config.agentSocket.empty()) return Grant{config.portMappings, false};
  auto request =
      allocationRequestFor(env_, config, std::move(annotations.dynamics), annotations.pool);
  request.forwarding = forwardingOf(config, attachment.addresses);
  request.sticky = annotations.sticky;
  HOSTPORT_TRY(const auto lease, authority(config).allocate(request));
  const bool installedByAgent = lease.forwarding.has_value();
  if (installedByAgent) {
    // A cache for a DEL while the agent is down; losing it only costs that DEL a listing.
    if (auto kept = agent::api::writeAttachmentRecord(config.stateDir, lease); !kept) {
      log("warning: cannot keep the attachment record: " + kept.error().message);
    }
  }
  return Grant{agent::forwards::mappingsOf(lease), true, installedByAgent};
}

Result<std::vector<PortMapping>> Invocation::grantedMappings(const PluginConfig& config) {
  if (config.agentSocket.empty()) return config.portMappings;
  HOSTPORT_TRY(const auto lease, authority(config).get(key()));
  if (!lease) {
    auto annotations = parsePortAnnotations(config.podAnnotations);
    const bool asked =
        !config.portMappings.empty() || (annotations && !annotations->dynamics.empty());
    if (!asked) return std::vector<PortMapping>{};
    return fail(ErrorCode::kNotFound, "hostport-agent holds no lease for " + key().str());
  }
  return agent::forwards::mappingsOf(*lease);
}

Result<nft::AttachmentPlan> Invocation::plan(const PluginConfig& config,
                                             const Attachment& attachment,
                                             const std::vector<PortMapping>& mappings) {
  HOSTPORT_TRY(auto planned, nft::planAttachment(attachment.owner, mappings,
                                                 podTarget(config, attachment.addresses)));
  for (const auto& warning : planned.warnings) log(warning);
  HOSTPORT_TRY_VOID(nft::requireForwards(planned));
  return planned;
}

void Invocation::releaseLease(const PluginConfig& config) {
  if (config.agentSocket.empty()) return;
  if (auto released = authority(config).release(key()); !released) {
    log("warning: cannot release the lease (the agent's reconciler will): " +
        released.error().message);
  }
}

Result<void> Invocation::install(const nft::AttachmentPlan& plan) {
  if (plan.rules.empty()) return {};
  HOSTPORT_TRY_VOID(agent::forwards::refuseNodeTargets(plan, network()));
  HOSTPORT_TRY(auto* tables, ruleset());
  HOSTPORT_TRY_VOID(agent::forwards::writePlan(plan, *tables, network(), *this));
  log("installed " + std::to_string(plan.rules.forwards.size()) + " forward(s)");
  return {};
}

void Invocation::rollbackFailed(const Error& cause) {
  log("error: cannot roll back after a failed ADD: " + cause.message);
}

void Invocation::conntrackFlushFailed(uint16_t port, const Error& cause) {
  log("warning: cannot flush UDP conntrack for port " + std::to_string(port) + ": " +
      cause.message);
}

Result<void> Invocation::add(const PluginConfig& config) {
  HOSTPORT_TRY(const auto target, attachment(config, "ADD"));
  HOSTPORT_TRY(const auto grant, grantPorts(config, target));
  Result<void> installed;
  if (grant.installedByAgent) {
    log("hostport-agent installed the forwards of " + std::to_string(grant.mappings.size()) +
        " port mapping(s)");
  } else {
    auto planned = plan(config, target, grant.mappings);
    installed = planned ? install(*planned) : Result<void>(std::unexpected(planned.error()));
  }
  if (!installed) {
    // No partial state: a lease without its forwards would hold ports nobody can reach.
    if (grant.leased) releaseLease(config);
    return installed;
  }
  HOSTPORT_TRY(const auto result,
               convertResult(*config.prevResult, target.resultAddresses, config.cniVersion));
  io_.out << result.dump(2, ' ', false, nlohmann::json::error_handler_t::replace) << "\n";
  return {};
}

void Invocation::settleRemoved(const nft::AttachmentRules& removed) {
  agent::forwards::flushUdpConntrack(nft::udpHostPorts(removed.forwards), network(), *this);
  if (!removed.empty()) log("removed " + std::to_string(removed.forwards.size()) + " forward(s)");
}

Result<void> Invocation::removeOwned() {
  // DEL must clean up whatever the config says: the owner comes from the environment alone.
  HOSTPORT_TRY(const auto owner, nft::makeOwner(env_.containerId, env_.ifname));
  HOSTPORT_TRY(auto* tables, ruleset());
  HOSTPORT_TRY(const auto removed, tables->remove(owner));
  settleRemoved(removed);
  return {};
}

Result<void> Invocation::removeStandalone(const PluginConfig& config) {
  auto target = attachment(config, "DEL");
  if (!target || config.portMappings.empty()) return removeOwned();
  auto planned =
      nft::planAttachment(target->owner, config.portMappings, podTarget(config, target->addresses));
  if (!planned) return removeOwned();
  HOSTPORT_TRY(auto* tables, ruleset());
  HOSTPORT_TRY(const auto removed, tables->removeIfOwned(planned->rules));
  settleRemoved(removed);
  return {};
}

Result<void> Invocation::removeWithoutAgent(const PluginConfig& config, const Error& why) {
  log("warning: hostport-agent cannot release the lease (" + why.message +
      "): removing the forwards here and leaving a release note in " + config.releaseSpool);
  auto record = agent::api::readAttachmentRecord(config.stateDir, key());
  if (!record) log("warning: ignoring the attachment record: " + record.error().message);
  auto plan = record && *record && (*record)->forwarding
                  ? agent::forwards::planOf(**record)
                  : Result<nft::AttachmentPlan>(fail(ErrorCode::kNotFound, "no record"));
  if (plan) {
    HOSTPORT_TRY(auto* tables, ruleset());
    HOSTPORT_TRY_VOID(tables->removeExact(plan->rules));
    agent::forwards::flushUdpConntrack(plan->udpHostPorts, network(), *this);
    log("removed " + std::to_string(plan->rules.forwards.size()) + " forward(s) by key");
  } else {
    HOSTPORT_TRY_VOID(removeOwned());
  }
  // The runtime retries a failed DEL: better than an agent that lays the forwards out again.
  HOSTPORT_TRY_VOID(agent::api::writeReleaseNote(config.releaseSpool, key()));
  (void)agent::api::removeAttachmentRecord(config.stateDir, key());
  return {};
}

Result<void> Invocation::del(const Result<PluginConfig>& config) {
  if (!config) {
    // The socket is unknown: the agent's reconciler finds the lease's sandbox gone later.
    log("warning: ignoring unusable config at DEL: " + config.error().message);
    return removeOwned();
  }
  if (config->agentSocket.empty()) return removeStandalone(*config);
  auto released = authority(*config).release(key());
  if (!released) return removeWithoutAgent(*config, released.error());
  (void)agent::api::removeAttachmentRecord(config->stateDir, key());
  // A lease from before forwarding records: its forwards are this plugin's to remove.
  if (*released && !(*released)->forwarding) return removeOwned();
  return {};
}

/// CHECK's verdict: the first difference, as kNotFound naming the element and its owner. Missing
/// forwards come first, then unexpected forwards, then missing masquerades and pod subnets. An
/// unexpected masquerade passes: it hides more client addresses from this pod, but breaks no
/// forward and holds no port.
Result<void> firstDifference(const nft::RulesDiff& difference, const std::string& owner) {
  if (!difference.missingForwards.empty()) {
    return fail(ErrorCode::kNotFound, "forward " +
                                          nft::describe(difference.missingForwards.front()) +
                                          " of " + owner + " is missing from table hostport");
  }
  if (!difference.unexpectedForwards.empty()) {
    return fail(ErrorCode::kNotFound, "table hostport holds an unexpected forward " +
                                          nft::describe(difference.unexpectedForwards.front()) +
                                          " for " + owner);
  }
  if (!difference.missingMasquerades.empty() || !difference.missingPodSubnets.empty()) {
    return fail(ErrorCode::kNotFound, difference.describeFirstMissing() + " of " + owner +
                                          " is missing from table hostport");
  }
  return {};
}

Result<void> Invocation::check(const PluginConfig& config) {
  HOSTPORT_TRY(const auto target, attachment(config, "CHECK"));
  HOSTPORT_TRY(const auto mappings, grantedMappings(config));
  if (!mappings.empty()) {
    HOSTPORT_TRY_VOID(requireContainerAddress(target.addresses, env_.ifname));
  }
  HOSTPORT_TRY(const auto planned, plan(config, target, mappings));
  HOSTPORT_TRY(auto* tables, ruleset());
  HOSTPORT_TRY(const auto installed, tables->listOwned(target.owner));
  return firstDifference(nft::diff(planned.rules, installed), target.owner);
}

/// GC and STATUS name no attachment: their lines carry the verb alone.
void verbLog(const PluginIo& io, std::string_view verb, const std::string& message) {
  io.err << "hostport " + std::string(verb) + ": " + message + "\n";
}

Result<void> Invocation::status(const PluginConfig& config) {
  if (config.agentSocket.empty()) return {};
  return judgeAgentStatus(authority(config).ready(), config.stateDir,
                          std::chrono::seconds(config.statusGraceSeconds), backends_.clock(),
                          [this](const std::string& message) { verbLog(io_, "STATUS", message); });
}

Result<void> Invocation::gc(const PluginConfig& config) {
  HOSTPORT_TRY(const auto valid, parseValidAttachments(config));
  // Standalone, the table's elements name their attachment but not their network, so GC of one
  // network cannot tell its own from another's; libcni runs DEL for every cached attachment
  // missing from the list before GC anyway.
  if (config.agentSocket.empty()) return {};
  if (const Problem problem = networkNameProblem(config.name)) {
    return invalidValue("name", nlohmann::json(config.name), *problem);
  }
  HOSTPORT_TRY(const auto released, authority(config).collectGarbage(config.name, valid));
  verbLog(io_, "GC",
          "network " + config.name + ": " + std::to_string(valid.size()) +
              " valid attachment(s), released " + std::to_string(released.size()) + " lease(s)");
  return {};
}

std::string versionOf(const Result<PluginConfig>& config) {
  return config && isSupported(config->cniVersion) ? config->cniVersion
                                                   : std::string(kLatestVersion);
}

Result<void> requireVersion(const PluginConfig& config, Verb verb) {
  if (!isSupported(config.cniVersion)) {
    std::string list;
    for (const auto& version : supportedVersions()) list += (list.empty() ? "" : ", ") + version;
    return fail(ErrorCode::kIncompatibleVersion,
                "cniVersion \"" + config.cniVersion.substr(0, 32) + "\" is not supported",
                "supported versions: " + list);
  }
  const std::string_view minimum = verb == Verb::kCheck                           ? "0.4.0"
                                   : (verb == Verb::kGc || verb == Verb::kStatus) ? "1.1.0"
                                                                                  : "0.3.0";
  if (compareVersions(config.cniVersion, minimum) < 0) {
    return fail(ErrorCode::kIncompatibleVersion, std::string(verbName(verb)) +
                                                     " needs cniVersion " + std::string(minimum) +
                                                     " or later, not " + config.cniVersion);
  }
  return {};
}

int report(const PluginIo& io, std::string_view version, const Error& error,
           bool pluginUnavailable = false) {
  io.out << errorDocument(version, error, pluginUnavailable ? kCniPluginNotAvailable : 0) << "\n";
  io.err << "hostport: error: " << error.message << "\n";
  return 1;
}

int printVersion(const PluginIo& io, const Result<PluginConfig>& config) {
  nlohmann::json answer = {{"cniVersion", versionOf(config)},
                           {"supportedVersions", supportedVersions()}};
  io.out << answer.dump() << "\n";
  return 0;
}

/// Runs a verb that has its config and environment; the exit code.
int runVerb(const PluginIo& io, Invocation& invocation, Verb verb,
            const Result<PluginConfig>& config) {
  if (verb == Verb::kDel) {
    const auto done = invocation.del(config);
    return done ? 0 : report(io, versionOf(config), done.error());
  }
  if (!config) return report(io, versionOf(config), config.error());
  if (auto supported = requireVersion(*config, verb); !supported) {
    return report(io, versionOf(config), supported.error());
  }
  Result<void> done;
  switch (verb) {
    case Verb::kAdd:
      done = invocation.add(*config);
      break;
    case Verb::kCheck:
      done = invocation.check(*config);
      break;
    case Verb::kStatus:
      done = invocation.status(*config);
      if (!done) done.error().message = "hostport-agent is not ready: " + done.error().message;
      break;
    case Verb::kGc:
      done = invocation.gc(*config);
      break;
    case Verb::kDel:
    case Verb::kVersion:
      break;
  }
  if (done) return 0;
  // STATUS has its own code for "cannot take ADDs now".
  Error error = done.error();
  if (verb == Verb::kStatus) error.code = ErrorCode::kUnavailable;
  return report(io, config->cniVersion, error, verb == Verb::kStatus);
}

}  // namespace

int runPlugin(const PluginIo& io, const PluginBackends& backends) {
  const auto config = parsePluginConfig(io.stdinText);
  auto env = parseCniEnv(io.getenv);
  if (!env) return report(io, versionOf(config), env.error());
  if (env->verb == Verb::kVersion) return printVersion(io, config);
  if (auto netns = checkCniNetns(*env, backends.netnsCheck); !netns) {
    return report(io, versionOf(config), netns.error());
  }

  Invocation invocation(io, backends, *env);
  const int code = runVerb(io, invocation, env->verb, config);
  if (invocation.openedTable() && backends.exitBeforeTeardown) backends.exitBeforeTeardown(code);
  return code;
}

}  // namespace hostport::cni
