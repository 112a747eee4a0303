#pragma once
// What NodePublishVolume asks of the hostport.io driver, checked before anything is written: an
// ephemeral inline volume of one pod, at a target path inside that pod's own directory under the
// kubelet's. The kubelet sends the pod in volume_context (podInfoOnMount in the CSIDriver object);
// the target path must name the same pod, so a request (or a bug) can never make the agent write
// into another pod's directory, or anywhere else on the node. Pure: no I/O.

#include <filesystem>
#include <map>
#include <string>
#include <string_view>

#include "common/error.h"
#include "lease/lease.h"

namespace hostport::agent::csi {

/// The driver's name: the CSIDriver object's, and what pods' `volumes[].csi.driver` say.
inline constexpr std::string_view kDriverName = "hostport.io";
/// The CSI version the driver serves, as the kubelet's registration asks for it.
inline constexpr std::string_view kCsiVersion = "1.0.0";

/// volume_context keys the kubelet sets (podInfoOnMount, and for an inline volume).
inline constexpr std::string_view kPodNameKey = "csi.storage.k8s.io/pod.name";
inline constexpr std::string_view kPodNamespaceKey = "csi.storage.k8s.io/pod.namespace";
inline constexpr std::string_view kPodUidKey = "csi.storage.k8s.io/pod.uid";
inline constexpr std::string_view kServiceAccountKey = "csi.storage.k8s.io/serviceAccount.name";
inline constexpr std::string_view kEphemeralKey = "csi.storage.k8s.io/ephemeral";

/// A target path the kubelet made for a CSI volume:
/// <kubeletDir>/pods/<pod uid>/volumes/kubernetes.io~csi/<volume name>/mount.
struct TargetPath {
  std::filesystem::path path;
  std::string podUid;  // the pod directory it is in
};

/// `text` as a TargetPath under `kubeletDir`. kInvalidArgument naming target_path and the value
/// for a relative path, an empty, "." or ".." component, or any other shape.
Result<TargetPath> parseTargetPath(std::string_view text, const std::filesystem::path& kubeletDir);

/// A published volume: the pod it belongs to and where its files go.
struct PodVolume {
  std::string volumeId;
  TargetPath target;
  PodIdentity pod;
  friend bool operator==(const PodVolume& a, const PodVolume& b) {
    return a.volumeId == b.volumeId && a.target.path == b.target.path && a.pod == b.pod;
  }
};

/// A volume id as a file name can hold it: 1 to 128 of [A-Za-z0-9._-], not starting with '.'.
/// kInvalidArgument naming volume_id and the value.
Result<void> checkVolumeId(std::string_view volumeId);

/// The request's volume, checked: the volume id, the target path, and a volume_context of an
/// ephemeral inline volume (ephemeral "true") that names its pod (name, namespace, uid), whose
/// uid is the target path's pod. Keys the driver does not read (volumeAttributes in the pod's
/// spec) are refused rather than ignored: the driver takes none. kInvalidArgument naming the
/// field, the key and the value.
Result<PodVolume> podVolumeOf(std::string_view volumeId, std::string_view targetPath,
                              const std::map<std::string, std::string>& volumeContext,
                              const std::filesystem::path& kubeletDir);

}  // namespace hostport::agent::csi
