#include "cni-plugin/dispatcher.h"

#include <algorithm>
#include <ostream>

#include "cni-plugin/attachment_plan.h"
#include "cni-plugin/cni_env.h"
#include "cni-plugin/cni_error.h"
#include "cni-plugin/cni_version.h"
#include "cni-plugin/plugin_config.h"
#include "cni-plugin/prev_result.h"
#include "nft/table_state.h"

namespace hostport::cni {
namespace {

constexpr std::string_view kLatestVersion = "1.1.0";

/// One invocation: its environment, config and the streams to answer on.
class Invocation {
 public:
  Invocation(const PluginIo& io, const PluginBackends& backends, CniEnv env)
      : io_(io), backends_(backends), env_(std::move(env)) {}

  Result<void> add(const PluginConfig& config);
  Result<void> del(const Result<PluginConfig>& config);
  Result<void> check(const PluginConfig& config);

 private:
  Result<AttachmentPlan> plan(const PluginConfig& config, std::string_view verb);
  Result<nft::Ruleset*> ruleset();
  Result<hostnet::HostNetwork*> hostNetwork();
  void flushUdpConntrack(const std::vector<uint16_t>& ports);
  void log(const std::string& message) const {
    io_.err << "hostport " << verbName(env_.verb) << " " << env_.containerId << "/" << env_.ifname
            << ": " << message << "\n";
  }

  const PluginIo& io_;
  const PluginBackends& backends_;
  CniEnv env_;
  std::string owner_;
  std::unique_ptr<nft::Ruleset> ruleset_;
  std::unique_ptr<hostnet::HostNetwork> hostNetwork_;
};

Result<nft::Ruleset*> Invocation::ruleset() {
  if (!ruleset_) {
    auto created = backends_.ruleset();
    if (!created) return std::unexpected(created.error());
    ruleset_ = std::move(*created);
  }
  return ruleset_.get();
}

Result<hostnet::HostNetwork*> Invocation::hostNetwork() {
  if (!hostNetwork_) {
    auto created = backends_.hostNetwork();
    if (!created) return std::unexpected(created.error());
    hostNetwork_ = std::move(*created);
  }
  return hostNetwork_.get();
}

Result<AttachmentPlan> Invocation::plan(const PluginConfig& config, std::string_view verb) {
  if (!config.prevResult) {
    return fail(ErrorCode::kInvalidArgument,
                "prevResult is missing: hostport is a chained plugin and must follow the "
                "primary network plugin in a conflist (" + std::string(verb) + ")");
  }
  auto addresses = containerAddresses(*config.prevResult, env_.ifname);
  if (!addresses) return std::unexpected(addresses.error());
  auto owner = nft::makeOwner(env_.containerId, env_.ifname);
  if (!owner) return std::unexpected(owner.error());
  owner_ = *owner;
  // Until the agent grants ports, the static portMappings are granted exactly as asked.
  auto planned = planAttachment(owner_, config.portMappings, *addresses, config);
  if (!planned) return planned;
  for (const auto& warning : planned->warnings) log(warning);
  return planned;
}

void Invocation::flushUdpConntrack(const std::vector<uint16_t>& ports) {
  if (ports.empty()) return;
  auto network = hostNetwork();
  for (const uint16_t port : ports) {
    auto flushed = network ? (*network)->flushUdpConntrack(port) : std::unexpected(network.error());
    // A stale flow only delays traffic to the new pod; it is not worth failing the pod for.
    if (!flushed) log("warning: cannot flush UDP conntrack for port " + std::to_string(port) +
                      ": " + flushed.error().message);
  }
}

Result<void> Invocation::add(const PluginConfig& config) {
  auto planned = plan(config, "ADD");
  if (!planned) return std::unexpected(planned.error());
  if (!planned->rules.empty()) {
    auto tables = ruleset();
    if (!tables) return std::unexpected(tables.error());
    if (auto installed = (*tables)->install(planned->rules); !installed) return installed;
    if (planned->routeLocalnetFor) {
      auto network = hostNetwork();
      auto enabled = network ? (*network)->enableRouteLocalnet(*planned->routeLocalnetFor)
                             : std::unexpected(network.error());
      if (!enabled) {
        // No partial state: the forwards go again before ADD reports the failure.
        if (auto undone = (*tables)->remove(owner_); !undone) {
          log("error: cannot roll back after a failed ADD: " + undone.error().message);
        }
        return withContext(enabled.error(), "enabling route_localnet");
      }
    }
    flushUdpConntrack(planned->udpHostPorts);
    log("installed " + std::to_string(planned->rules.forwards.size()) + " forward(s)");
  }
  auto result = convertResult(*config.prevResult, config.cniVersion);
  if (!result) return std::unexpected(result.error());
  io_.out << result->dump(2, ' ', false, nlohmann::json::error_handler_t::replace) << "\n";
  return {};
}

Result<void> Invocation::del(const Result<PluginConfig>& config) {
  // DEL must clean up whatever the config says: the owner comes from the environment alone.
  if (!config) log("warning: ignoring unusable config at DEL: " + config.error().message);
  auto owner = nft::makeOwner(env_.containerId, env_.ifname);
  if (!owner) return std::unexpected(owner.error());
  owner_ = *owner;
  auto tables = ruleset();
  if (!tables) return std::unexpected(tables.error());
  auto removed = (*tables)->remove(owner_);
  if (!removed) return std::unexpected(removed.error());
  flushUdpConntrack(udpHostPorts(removed->forwards));
  if (!removed->empty()) {
    log("removed " + std::to_string(removed->forwards.size()) + " forward(s)");
  }
  return {};
}

Result<void> Invocation::check(const PluginConfig& config) {
  auto planned = plan(config, "CHECK");
  if (!planned) return std::unexpected(planned.error());
  auto tables = ruleset();
  if (!tables) return std::unexpected(tables.error());
  auto installed = (*tables)->listOwned(owner_);
  if (!installed) return std::unexpected(installed.error());
  for (const auto& expected : planned->rules.forwards) {
    const bool found = std::ranges::any_of(installed->forwards, [&](const nft::Forward& have) {
      return nft::matchesInstalled(expected, have);
    });
    if (!found) {
      return fail(ErrorCode::kNotFound, "forward " + nft::describe(expected) + " of " + owner_ +
                                            " is missing from table hostport");
    }
  }
  for (const auto& have : installed->forwards) {
    const bool expected = std::ranges::any_of(planned->rules.forwards, [&](const nft::Forward& e) {
      return nft::matchesInstalled(e, have);
    });
    if (!expected) {
      return fail(ErrorCode::kNotFound, "table hostport holds an unexpected forward " +
                                            nft::describe(have) + " for " + owner_);
    }
  }
  for (const auto& expected : planned->rules.masquerades) {
    if (std::ranges::find(installed->masquerades, expected) == installed->masquerades.end()) {
      return fail(ErrorCode::kNotFound, "masquerade " + expected.source.str() + " -> " +
                                            expected.podIp.str() + " of " + owner_ +
                                            " is missing from table hostport");
    }
  }
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
  const std::string_view minimum = verb == Verb::kCheck                          ? "0.4.0"
                                   : (verb == Verb::kGc || verb == Verb::kStatus) ? "1.1.0"
                                                                                  : "0.3.0";
  if (compareVersions(config.cniVersion, minimum) < 0) {
    return fail(ErrorCode::kIncompatibleVersion,
                std::string(verbName(verb)) + " needs cniVersion " + std::string(minimum) +
                    " or later, not " + config.cniVersion);
  }
  return {};
}

int report(const PluginIo& io, std::string_view version, const Error& error) {
  io.out << errorDocument(version, error) << "\n";
  io.err << "hostport: error: " << error.message << "\n";
  return 1;
}

int printVersion(const PluginIo& io, const Result<PluginConfig>& config) {
  nlohmann::json answer = {{"cniVersion", versionOf(config)},
                           {"supportedVersions", supportedVersions()}};
  io.out << answer.dump() << "\n";
  return 0;
}

}  // namespace

int runPlugin(const PluginIo& io, const PluginBackends& backends) {
  const auto config = parsePluginConfig(io.stdinText);
  auto env = parseCniEnv(io.getenv);
  if (!env) return report(io, versionOf(config), env.error());
  if (env->verb == Verb::kVersion) return printVersion(io, config);

  Invocation invocation(io, backends, *env);
  if (env->verb == Verb::kDel) {
    const auto done = invocation.del(config);
    return done ? 0 : report(io, versionOf(config), done.error());
  }
  if (!config) return report(io, versionOf(config), config.error());
  if (auto supported = requireVersion(*config, env->verb); !supported) {
    return report(io, versionOf(config), supported.error());
  }
  Result<void> done;
  switch (env->verb) {
    case Verb::kAdd:
      done = invocation.add(*config);
      break;
    case Verb::kCheck:
      done = invocation.check(*config);
      break;
    case Verb::kGc:      // the agent gives GC real work; without one there is nothing to collect
    case Verb::kStatus:  // ready whenever the binary runs, until an agent is required
    case Verb::kDel:
    case Verb::kVersion:
      break;
  }
  return done ? 0 : report(io, config->cniVersion, done.error());
}

}  // namespace hostport::cni
