#pragma once
// The CNI_* environment of one invocation, validated per verb.

#include <functional>
#include <map>
#include <string>
#include <string_view>

#include "common/error.h"

namespace hostport::cni {

enum class Verb { kAdd, kDel, kCheck, kVersion, kGc, kStatus };

struct CniEnv {
  Verb verb = Verb::kVersion;
  std::string containerId;  // CNI_CONTAINERID
  std::string netns;        // CNI_NETNS; may be empty for DEL
  std::string ifname;       // CNI_IFNAME
  std::string path;         // CNI_PATH
  /// CNI_ARGS "K=V;K=V" (order varies by runtime). Unknown keys are kept, not rejected.
  std::map<std::string, std::string> args;
};

/// Reads the environment through `getenv` (injectable for tests). Errors are kInvalidEnvironment
/// and name the variable and value: a missing CNI_COMMAND, an unknown verb, a missing
/// CNI_CONTAINERID/CNI_IFNAME for ADD/DEL/CHECK, a missing CNI_NETNS for ADD/CHECK, a
/// containerID outside the spec grammar ^[A-Za-z0-9][A-Za-z0-9_.-]*$ (at most 100 chars), an
/// ifname that is empty, longer than 15, "." or "..", or holds '/', ':', whitespace, '"' or '\'.
Result<CniEnv> parseCniEnv(const std::function<const char*(const char*)>& getenv);

std::string_view verbName(Verb verb);  // "ADD", ...

}  // namespace hostport::cni
