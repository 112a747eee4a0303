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
/// CNI_CONTAINERID/CNI_IFNAME for ADD/DEL/CHECK, a missing CNI_NETNS for ADD/CHECK, a container
/// ID or an ifname outside its grammar (common/identifiers.h), with the ifname's precise problem.
Result<CniEnv> parseCniEnv(const std::function<const char*(const char*)>& getenv);

std::string_view verbName(Verb verb);  // "ADD", ...

/// Says whether `path` names a network namespace: hostnet::networkNamespaceAt() in the plugin
/// binary (its errors are worded to follow the path), a fake in tests.
using NetnsCheck = std::function<Result<void>(const std::string& path)>;

/// For ADD and CHECK, refuses a CNI_NETNS that is not an absolute path or that `check` says names
/// no network namespace: kInvalidEnvironment (CNI code 4) naming the variable, the path and what
/// is there instead. A lease for it would forward to a sandbox that cannot exist, and one the
/// agent's reconciler could never judge gone. DEL's netns may be gone already; other verbs have
/// none.
Result<void> checkCniNetns(const CniEnv& env, const NetnsCheck& check);

}  // namespace hostport::cni
