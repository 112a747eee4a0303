#include "cni-plugin/cni_env.h"

#include <algorithm>
#include <array>
#include <optional>
#include <utility>

#include "cni-plugin/plugin_config.h"

// Every value here comes from the runtime's environment and later reaches nft comments, file
// paths and log lines, so identifiers are checked against the spec's grammar rather than trusted.

namespace hostport::cni {
namespace {

constexpr size_t kMaxContainerIdLength = 100;
constexpr size_t kMaxIfnameLength = 15;  // IFNAMSIZ - 1

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
  return invalidValue(ErrorCode::kInvalidEnvironment, variable, std::string(value), problem);
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

bool isAlnum(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9');
}

Result<void> validateContainerId(const std::string& id) {
  bool valid = !id.empty() && id.size() <= kMaxContainerIdLength && isAlnum(id.front());
  for (const char c : id) {
    valid = valid && (isAlnum(c) || c == '_' || c == '.' || c == '-');
  }
  if (!valid) {
    return envError("CNI_CONTAINERID", id,
                    "must match [A-Za-z0-9][A-Za-z0-9_.-]* and be at most 100 characters");
  }
  return {};
}

/// The kernel's dev_valid_name() rules, narrowed to printable ASCII without quotes or
/// backslashes: the kernel allows those, but they would need escaping in nft comments and logs.
Result<void> validateIfname(const std::string& name) {
  if (name.size() > kMaxIfnameLength) {
    return envError("CNI_IFNAME", name, "is longer than 15 characters");
  }
  if (name == "." || name == "..") return envError("CNI_IFNAME", name, "is not a valid name");
  for (const char c : name) {
    const auto byte = static_cast<unsigned char>(c);
    if (c == ' ' || (byte >= '\t' && byte <= '\r')) {
      return envError("CNI_IFNAME", name, "must not contain whitespace");
    }
    if (byte < 0x20 || byte >= 0x7f) {
      return envError("CNI_IFNAME", name, "must contain only printable ASCII characters");
    }
    if (c == '/' || c == ':' || c == '"' || c == '\\') {
      return envError("CNI_IFNAME", name, std::string("must not contain '") + c + "'");
    }
  }
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
  if (auto valid = validateContainerId(*containerId); !valid) return valid;
  env.containerId = *containerId;

  const auto ifname = readVariable(getenv, "CNI_IFNAME");
  if (!ifname) return missing("CNI_IFNAME", env.verb);
  if (auto valid = validateIfname(*ifname); !valid) return valid;
  env.ifname = *ifname;

  // containerd's second DEL (at sandbox removal) comes with the netns already gone.
  env.netns = readVariable(getenv, "CNI_NETNS").value_or("");
  if (env.netns.empty() && env.verb != Verb::kDel) return missing("CNI_NETNS", env.verb);

  auto args = parseArgs(readVariable(getenv, "CNI_ARGS").value_or(""));
  if (!args) return std::unexpected(std::move(args.error()));
  env.args = std::move(*args);
  return {};
}

}  // namespace

std::string_view verbName(Verb verb) {
  for (const auto& [candidate, name] : kVerbs) {
    if (candidate == verb) return name;
  }
  return "UNKNOWN";
}

Result<CniEnv> parseCniEnv(const std::function<const char*(const char*)>& getenv) {
  CniEnv env;
  auto verb = parseVerb(readVariable(getenv, "CNI_COMMAND"));
  if (!verb) return std::unexpected(std::move(verb.error()));
  env.verb = *verb;
  env.path = readVariable(getenv, "CNI_PATH").value_or("");
  if (isAttachmentVerb(env.verb)) {
    if (auto read = readAttachment(getenv, env); !read) return std::unexpected(read.error());
  }
  return env;
}

}  // namespace hostport::cni
