#include "agent/server/pod_cgroup.h"

#include <algorithm>
#include <ranges>
#include <vector>

#include "common/quote.h"

namespace hostport::agent::server {
namespace {

/// The name the kubelet gives the cgroup above every pod's (under its --cgroup-root).
constexpr std::string_view kPodsRoot = "kubepods";
constexpr std::string_view kSliceSuffix = ".slice";
/// Longer than any UID the kubelet makes (36: an API UUID; 32: a static pod's hash).
constexpr std::size_t kMaxUid = 64;

bool isUidCharacter(char c, char dash) {
  return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f') || c == dash;
}

/// `text` as a UID spelled with `dash` for '-', or nullopt.
std::optional<std::string> uidText(std::string_view text, char dash) {
  if (text.empty() || text.size() > kMaxUid) return std::nullopt;
  if (!std::ranges::all_of(text, [dash](char c) { return isUidCharacter(c, dash); })) {
    return std::nullopt;
  }
  std::string uid(text);
  std::ranges::replace(uid, dash, '-');
  return uid;
}

/// "kubepods-burstable-pod<uid_>.slice": the systemd driver's pod slice.
std::optional<std::string> systemdPodUid(std::string_view component) {
  if (!component.ends_with(kSliceSuffix)) return std::nullopt;
  const std::string_view stem = component.substr(0, component.size() - kSliceSuffix.size());
  const auto at = stem.rfind("-pod");
  if (at == std::string_view::npos) return std::nullopt;
  const std::string_view parents = stem.substr(0, at);
  const bool underPods = std::ranges::any_of(std::views::split(parents, '-'), [](auto part) {
    return std::string_view(part.begin(), part.end()) == kPodsRoot;
  });
  if (!underPods) return std::nullopt;
  return uidText(stem.substr(at + 4), '_');
}

/// "pod<uid>" below a "kubepods" directory: the cgroupfs driver's pod cgroup.
std::optional<std::string> cgroupfsPodUid(std::string_view component, bool belowPodsRoot) {
  if (!belowPodsRoot || !component.starts_with("pod")) return std::nullopt;
  return uidText(component.substr(3), '-');
}

/// The pod one cgroup path names; kUnavailable when it names two.
Result<std::optional<std::string>> podUidOfPath(std::string_view path) {
  std::optional<std::string> found;
  bool belowPodsRoot = false;
  for (const auto part : std::views::split(path, '/')) {
    const std::string_view component(part.begin(), part.end());
    auto uid = systemdPodUid(component);
    if (!uid) uid = cgroupfsPodUid(component, belowPodsRoot);
    belowPodsRoot = belowPodsRoot || component == kPodsRoot;
    if (!uid) continue;
    if (found) {
      return fail(ErrorCode::kUnavailable,
                  "the cgroup " + quoteText(path) + " names two pods, " + *found + " and " + *uid);
    }
    found = std::move(uid);
  }
  return found;
}

}  // namespace

Result<std::optional<std::string>> podUidOfCgroups(std::string_view procCgroup) {
  std::optional<std::string> found;
  for (const auto part : std::views::split(procCgroup, '\n')) {
    const std::string_view line(part.begin(), part.end());
    // "<hierarchy id>:<controllers>:<path>"; the path may hold ':' itself.
    const auto first = line.find(':');
    const auto second = first == std::string_view::npos ? first : line.find(':', first + 1);
    if (second == std::string_view::npos) continue;
    HOSTPORT_TRY(auto uid, podUidOfPath(line.substr(second + 1)));
    if (!uid) continue;
    if (found && *found != *uid) {
      return fail(ErrorCode::kUnavailable,
                  "the process's cgroups name two pods, " + *found + " and " + *uid);
    }
    found = std::move(uid);
  }
  return found;
}

}  // namespace hostport::agent::server
