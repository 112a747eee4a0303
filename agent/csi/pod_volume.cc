#include "agent/csi/pod_volume.h"

#include <algorithm>
#include <array>
#include <span>
#include <vector>

#include "common/quote.h"

namespace hostport::agent::csi {
namespace {

constexpr std::size_t kMaxVolumeIdLength = 128;
constexpr std::size_t kMaxUidLength = 128;
constexpr std::size_t kMaxEchoedPath = 1024;  // a path is echoed whole in a refusal

Error invalid(std::string message) {
  return Error{ErrorCode::kInvalidArgument, std::move(message), {}, {}};
}

/// The components of an absolute path, refusing what makes a path mean something else than it
/// reads: empty components ("//"), "." and "..".
Result<std::vector<std::string_view>> components(std::string_view text) {
  if (!text.starts_with('/')) return std::unexpected(invalid("is not an absolute path"));
  std::vector<std::string_view> parts;
  std::string_view rest = text.substr(1);
  while (!rest.empty()) {
    const auto slash = rest.find('/');
    const std::string_view part = rest.substr(0, slash);
    if (part.empty() || part == "." || part == "..") {
      return std::unexpected(invalid("has a component \"" + std::string(part) + "\""));
    }
    parts.push_back(part);
    rest = slash == std::string_view::npos ? std::string_view{} : rest.substr(slash + 1);
  }
  return parts;
}

/// A kubelet pod UID, or a volume name: a plain name, never a path.
bool isPlainName(std::string_view name, std::size_t maxLength) {
  return !name.empty() && name.size() <= maxLength && name != "." && name != ".." &&
         std::ranges::none_of(name, [](char c) {
           return c == '/' || c == '\0' || static_cast<unsigned char>(c) < 0x20;
         });
}

}  // namespace

Result<TargetPath> parseTargetPath(std::string_view text, const std::filesystem::path& kubeletDir) {
  const std::string expected =
      kubeletDir.string() + "/pods/<pod uid>/volumes/kubernetes.io~csi/<volume name>/mount";
  const auto refuse = [&](const std::string& why) {
    return std::unexpected(invalid("target_path: " + quoteText(text, kMaxEchoedPath) + " " + why +
                                   " (the kubelet's are " + expected + ")"));
  };
  auto parts = components(text);
  if (!parts) return refuse(parts.error().message);
  const std::string baseText = kubeletDir.string();  // the views below point into it
  auto base = components(baseText);
  if (!base) return refuse("cannot be checked: the kubelet directory " + base.error().message);
  // <base...> pods <uid> volumes kubernetes.io~csi <name> mount
  if (parts->size() != base->size() + 6 ||
      !std::equal(base->begin(), base->end(), parts->begin())) {
    return refuse("is not a CSI volume's directory of the kubelet's pods");
  }
  const auto tail = std::span(*parts).subspan(base->size());
  if (tail[0] != "pods" || tail[2] != "volumes" || tail[3] != "kubernetes.io~csi" ||
      tail[5] != "mount" || !isPlainName(tail[1], kMaxUidLength) ||
      !isPlainName(tail[4], kMaxVolumeIdLength)) {
    return refuse("is not a CSI volume's directory of the kubelet's pods");
  }
  return TargetPath{std::filesystem::path(text), std::string(tail[1])};
}

Result<void> checkVolumeId(std::string_view volumeId) {
  const bool valid = !volumeId.empty() && volumeId.size() <= kMaxVolumeIdLength &&
                     !volumeId.starts_with('.') && std::ranges::all_of(volumeId, [](char c) {
                       return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
                              (c >= '0' && c <= '9') || c == '.' || c == '_' || c == '-';
                     });
  if (valid) return {};
  return std::unexpected(invalid("volume_id: " + quoteText(volumeId) +
                                 " is not 1 to 128 of [A-Za-z0-9._-] (not starting with '.')"));
}

Result<PodVolume> podVolumeOf(std::string_view volumeId, std::string_view targetPath,
                              const std::map<std::string, std::string>& volumeContext,
                              const std::filesystem::path& kubeletDir) {
  HOSTPORT_TRY_VOID(checkVolumeId(volumeId));
  HOSTPORT_TRY(TargetPath target, parseTargetPath(targetPath, kubeletDir));
  const auto value = [&](std::string_view key) -> std::string {
    const auto found = volumeContext.find(std::string(key));
    return found == volumeContext.end() ? std::string{} : found->second;
  };
  for (const auto& [key, text] : volumeContext) {
    static constexpr std::array kRead = {kPodNameKey, kPodNamespaceKey, kPodUidKey,
                                         kServiceAccountKey, kEphemeralKey};
    if (std::ranges::find(kRead, key) == kRead.end()) {
      return std::unexpected(
          invalid("volume_context: " + quoteText(key) + " (" + quoteText(text) +
                  ") is not read by " + std::string(kDriverName) +
                  ", which takes no volumeAttributes: remove it from the pod's csi volume"));
    }
  }
  if (value(kEphemeralKey) != "true") {
    return std::unexpected(
        invalid("volume_context: " + std::string(kEphemeralKey) + " is " +
                quoteText(value(kEphemeralKey)) + ", not \"true\": " + std::string(kDriverName) +
                " serves ephemeral inline volumes only (a pod's volumes[].csi)"));
  }
  PodIdentity pod{value(kPodNamespaceKey), value(kPodNameKey), value(kPodUidKey)};
  for (const auto& [key, field] :
       {std::pair{kPodNamespaceKey, &pod.namespaceName}, std::pair{kPodNameKey, &pod.name},
        std::pair{kPodUidKey, &pod.uid}}) {
    if (field->empty()) {
      return std::unexpected(invalid("volume_context: " + std::string(key) +
                                     " is missing: the CSIDriver object " +
                                     std::string(kDriverName) + " must set podInfoOnMount: true"));
    }
  }
  if (pod.uid != target.podUid) {
    return std::unexpected(invalid("target_path: " + quoteText(targetPath, kMaxEchoedPath) +
                                   " is in pod " + target.podUid +
                                   "'s directory, but volume_context names pod " + pod.uid));
  }
  return PodVolume{std::string(volumeId), std::move(target), std::move(pod)};
}

}  // namespace hostport::agent::csi
