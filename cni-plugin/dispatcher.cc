#include "cni-plugin/dispatcher.h"

#include <ostream>

#include "agent/api/node_files.h"
#include "cni-plugin/attachment_mode.h"
#include "cni-plugin/cni_env.h"
#include "cni-plugin/cni_error.h"
#include "cni-plugin/cni_version.h"
#include "cni-plugin/invocation.h"
#include "cni-plugin/plugin_config.h"

namespace hostport::cni {
namespace {

constexpr std::string_view kLatestVersion = "1.1.0";

/// The one place the mode is decided (attachment_mode.h).
std::unique_ptr<AttachmentMode> modeFor(const PluginConfig& config, Invocation& invocation) {
  return config.agentSocket.empty() ? standaloneMode(invocation) : agentMode(invocation);
}

/// DEL without a usable config: the socket is unknown, so whatever carries the attachment's
/// owner tag goes; the agent's reconciler finds the lease's sandbox gone later.
Result<void> delWithoutConfig(Invocation& invocation, const Error& why) {
  invocation.log("warning: ignoring unusable config at DEL: " + why.message);
  return invocation.removeOwned();
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
    const auto done = config ? modeFor(*config, invocation)->del(*config)
                             : delWithoutConfig(invocation, config.error());
    return done ? 0 : report(io, versionOf(config), done.error());
  }
  if (!config) return report(io, versionOf(config), config.error());
  if (auto supported = requireVersion(*config, verb); !supported) {
    return report(io, versionOf(config), supported.error());
  }
  const auto mode = modeFor(*config, invocation);
  Result<void> done;
  switch (verb) {
    case Verb::kAdd:
      done = mode->add(*config);
      break;
    case Verb::kCheck:
      done = mode->check(*config);
      break;
    case Verb::kStatus:
      done = mode->status(*config);
      if (!done) done.error().message = "hostport-agent is not ready: " + done.error().message;
      break;
    case Verb::kGc: {
      auto valid = parseValidAttachments(*config);
      done = valid ? mode->gc(*config, *valid) : Result<void>(std::unexpected(valid.error()));
      break;
    }
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
  if (invocation.openedTable() && backends.exitBeforeTeardown) {
    backends.exitBeforeTeardown(
        code, config ? config->stateDir : std::string(agent::api::kDefaultRecordDir));
  }
  return code;
}

}  // namespace hostport::cni
