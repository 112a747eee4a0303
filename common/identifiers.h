#pragma once
// The grammar of every identifier that crosses a boundary (the CNI environment, pod annotations,
// the control socket, the agent's config, names the kernel reports), in one place, so the plugin,
// the agent and hostportctl accept exactly the same text. A value that passes one of our grammars
// is safe in a URL path segment, a log line, a file path component and an nft comment.
//
// Each grammar has a boolean check and a problem text, which ends a sentence about the value
// ("CNI_IFNAME: \"a/b\" must not contain '/'"), so every caller words a refusal alike. Every check
// is by ASCII (common/ascii.h), never by the locale.

#include <cstddef>
#include <optional>
#include <string_view>

namespace hostport {

inline constexpr std::size_t kMaxContainerIdLength = 100;  // "id/ifname" fits an nft comment
inline constexpr std::size_t kMaxIfnameLength = 15;        // IFNAMSIZ - 1
inline constexpr std::size_t kMaxDnsLabelLength = 63;
inline constexpr std::size_t kMaxDnsSubdomainLength = 253;
inline constexpr std::size_t kMaxPodUidLength = 128;
inline constexpr std::size_t kMaxNetnsPathLength = 4096;  // PATH_MAX
inline constexpr std::size_t kMaxNetworkNameLength = 253;

/// What is wrong with a value, worded to follow it ("must ...", "is ..."); none when it is valid.
using Problem = std::optional<std::string_view>;

/// CNI's rule: 1-100 characters of [A-Za-z0-9_.-], starting alphanumeric.
bool isContainerId(std::string_view text);
Problem containerIdProblem(std::string_view text);

/// Ours: 1-15 printable ASCII characters without whitespace or any of / : " \, and not "." or
/// "..". Stricter than the kernel's rule, so the name needs no escaping in nft comments and logs.
bool isIfname(std::string_view text);
/// The first thing wrong, precisely: "is longer than 15 characters", "must not contain '/'", ...
Problem ifnameProblem(std::string_view text);

/// The kernel's own rule (dev_valid_name): 1-15 bytes, not "." or "..", no '/', ':' or
/// whitespace; here also no control character or DEL. For names the kernel gives us, which may
/// hold quotes, backslashes and non-ASCII bytes that isIfname() refuses.
bool isKernelIfname(std::string_view text);

/// [a-z0-9]([a-z0-9-]*[a-z0-9])?, at most 63: a Kubernetes namespace, a port name, a pool name.
bool isDnsLabel(std::string_view text);
Problem dnsLabelProblem(std::string_view text);

/// DNS labels joined by dots, at most 253: a pod name.
bool isDnsSubdomain(std::string_view text);
Problem dnsSubdomainProblem(std::string_view text);

/// 1-128 characters of [A-Za-z0-9-] (a Kubernetes UID is a UUID).
bool isPodUid(std::string_view text);
Problem podUidProblem(std::string_view text);

/// libcni's rule for a network name, [A-Za-z0-9][A-Za-z0-9_.-]*, here at most 253 characters.
bool isNetworkName(std::string_view text);
Problem networkNameProblem(std::string_view text);

/// An absolute path of printable ASCII characters, at most PATH_MAX.
bool isNetnsPath(std::string_view text);
Problem netnsPathProblem(std::string_view text);

}  // namespace hostport
