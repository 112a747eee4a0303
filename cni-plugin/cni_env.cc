#include "cni-plugin/cni_env.h"

#include <algorithm>
#include <array>
#include <optional>
#include <utility>

#include "common/identifiers.h"
#include "common/json_fields.h"

// Every value here comes from the runtime's environment and later reaches nft comments, file
// paths and log lines, so identifiers are checked against the spec's grammar rather than trusted.

namespace hostport::cni {
namespace {

constexpr std::array<std::pair<Verb, std::string_view>, 6> kVerbs{{
    {Verb::kAdd, "ADD"},
    {Verb::kDel, "DEL"},
    {Verb::kCheck, "CHECK"},
    {Verb::kVersion, "VERSION"},
    {Verb::kGc, "GC"},
    {Verb::kStatus, "STATUS"},
}};

std::unexpected<Error> envError(std::string_view variable, std::string_view value,
                                std::string_view problem) {
  return invalidValue(variable, std::string(value), problem, ErrorCode::kInvalidEnvironment);
}

std::unexpected<Error> missing(std::string_view variable, Verb verb) {
  return fail(ErrorCode::kInvalidEnvironment, std::string(variable) + ": missing (required for " +
                                                  std::string(verbName(verb)) + ")");
}

/// Unset and empty are the same to the spec: runtimes export empty variables they do not use.
std::optional<std::string> readVariable(const std::function<const char*(const char*)>& getenv,
                                        const char* name) {
  const char* value = getenv(name);
  if (value == nullptr || *value == '\0') return std::nullopt;
  return std::string(value);
}

Result<Verb> parseVerb(const std::optional<std::string>& command) {
  if (!command) return fail(ErrorCode::kInvalidEnvironment, "CNI_COMMAND: missing");
  for (const auto& [verb, name] : kVerbs) {
    if (*command == name) return verb;
  }
  return envError("CNI_COMMAND", *command, "is not one of ADD, DEL, CHECK, VERSION, GC, STATUS");
}

/// `value` of `variable`, checked by one of common/identifiers.h's grammars.
Result<void> checkGrammar(std::string_view variable, const std::string& value,
                          Problem (*problem)(std::string_view)) {
  if (const Problem found = problem(value)) return envError(variable, value, *found);
  return {};
}

Result<std::map<std::string, std::string>> parseArgs(std::string_view text) {
  std::map<std::string, std::string> args;
  while (!text.empty()) {
    const size_t end = std::min(text.find(';'), text.size());
    const std::string_view segment = text.substr(0, end);
    text.remove_prefix(std::min(end + 1, text.size()));
    if (segment.empty()) continue;  // "A=1;;B=2" and a trailing ';' are harmless
    const size_t equals = segment.find('=');
    if (equals == std::string_view::npos) {
      return envError("CNI_ARGS", segment, "is not a KEY=VALUE pair");
    }
    if (equals == 0) return envError("CNI_ARGS", segment, "has an empty key");
    // The value keeps any further '=': only the first one separates the key.
    args[std::string(segment.substr(0, equals))] = std::string(segment.substr(equals + 1));
  }
  return args;
}

bool isAttachmentVerb(Verb verb) {
  return verb == Verb::kAdd || verb == Verb::kDel || verb == Verb::kCheck;
}

/// ADD, DEL and CHECK name one attachment; the other verbs ignore these variables, so a stale
/// value left in the runtime's environment must not fail them.
Result<void> readAttachment(const std::function<const char*(const char*)>& getenv, CniEnv& env) {
  const auto containerId = readVariable(getenv, "CNI_CONTAINERID");
  if (!containerId) return missing("CNI_CONTAINERID", env.verb);
  HOSTPORT_TRY_VOID(checkGrammar("CNI_CONTAINERID", *containerId, containerIdProblem));
  env.containerId = *containerId;

  const auto ifname = readVariable(getenv, "CNI_IFNAME");
  if (!ifname) return missing("CNI_IFNAME", env.verb);
  HOSTPORT_TRY_VOID(checkGrammar("CNI_IFNAME", *ifname, ifnameProblem));
  env.ifname = *ifname;

  // containerd's second DEL (at sandbox removal) comes with the netns already gone.
  env.netns = readVariable(getenv, "CNI_NETNS").value_or("");
  if (env.netns.empty() && env.verb != Verb::kDel) return missing("CNI_NETNS", env.verb);

  HOSTPORT_TRY(env.args, parseArgs(readVariable(getenv, "CNI_ARGS").value_or("")));
  return {};
}

}  // namespace

std::string_view verbName(Verb verb) {
  for (const auto& [candidate, name] : kVerbs) {
    if (candidate == verb) return name;
  }
  return "UNKNOWN";
}

Result<void> checkCniNetns(const CniEnv& env, const NetnsCheck& check) {
  if (env.verb != Verb::kAdd && env.verb != Verb::kCheck) return {};
  HOSTPORT_TRY_VOID(checkGrammar("CNI_NETNS", env.netns, netnsPathProblem));
  if (auto found = check(env.netns); !found) {
    // Not there, something else or unreadable: to the runtime each is an environment it must not
    // have passed. The errno stays the cause.
    auto refused = envError("CNI_NETNS", env.netns, found.error().message);
    refused.error().cause = found.error().cause;
    return refused;
  }
  return {};
}

Result<CniEnv> parseCniEnv(const std::function<const char*(const char*)>& getenv) {
  CniEnv env;
  HOSTPORT_TRY(env.verb, parseVerb(readVariable(getenv, "CNI_COMMAND")));
  env.path = readVariable(getenv, "CNI_PATH").value_or("");
  if (isAttachmentVerb(env.verb)) {
    HOSTPORT_TRY_VOID(readAttachment(getenv, env));
  }
  return env;
}

}  // namespace hostport::cni
