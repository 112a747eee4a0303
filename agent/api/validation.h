#pragma once
// The grammars of every name that crosses the control socket or comes from a pod annotation, in
// one place, so the plugin, the agent and hostportctl accept exactly the same text. Each check is
// strict enough that a valid value is safe in a URL path segment, a log line and an nft comment.

#include <nlohmann/json.hpp>
#include <string>
#include <string_view>

#include "common/quote.h"

namespace hostport::agent::api {

inline constexpr std::size_t kMaxNameLength = 63;          // DNS label
inline constexpr std::size_t kMaxPodNameLength = 253;      // DNS subdomain
inline constexpr std::size_t kMaxContainerIdLength = 100;  // as nft::makeOwner
inline constexpr std::size_t kMaxIfnameLength = 15;        // IFNAMSIZ - 1
inline constexpr std::size_t kMaxPodUidLength = 128;
inline constexpr std::size_t kMaxNetnsLength = 4096;  // PATH_MAX

/// [a-z0-9]([a-z0-9-]*[a-z0-9])?, at most 63: a Kubernetes port name or a pool name.
bool isDnsLabel(std::string_view text);
/// Lowercase DNS labels joined by dots, at most 253: a pod name.
bool isDnsSubdomain(std::string_view text);
/// CNI's rule: 1-100 characters of [A-Za-z0-9_.-], starting alphanumeric.
bool isContainerId(std::string_view text);
/// 1-15 printable characters without '/', ':', '"' or '\', and not "." or "..".
bool isIfname(std::string_view text);
/// 1-128 characters of [A-Za-z0-9-] (a Kubernetes UID is a UUID).
bool isPodUid(std::string_view text);
/// An absolute path of printable characters, at most PATH_MAX.
bool isNetnsPath(std::string_view text);

// Echoing untrusted text in messages: one implementation for the whole project.
using hostport::echo;
using hostport::quoteText;

}  // namespace hostport::agent::api
