#pragma once
// What a pod's hostport.io volume holds, and nothing else: ports.json (GET /v1/self's document),
// ports.env (GET /v1/self/env's lines) and pod.sock (the pod socket's API for that pod alone,
// agent/server/pod_server.h). The agent writes into the target directory the kubelet made room
// for, which the container runtime then bind-mounts into the pod's containers: no mount of the
// agent's, so no Bidirectional propagation and no CAP_SYS_ADMIN (docs/design.md, "Ports in a CSI
// volume").
//
// Each file is replaced whole (a temporary name and rename(2)), so a reader sees the old ports or
// the new ones, never a torn file. Not fsynced: after a crash the agent writes them again from its
// leases. Mode 0644 in a 0755 directory owned by root: a pod running as any user reads them, none
// writes them.

#include <filesystem>
#include <string_view>
#include <vector>

#include "common/error.h"
#include "lease/lease.h"

namespace hostport::agent::csi {

inline constexpr std::string_view kPortsJsonFile = "ports.json";
inline constexpr std::string_view kPortsEnvFile = "ports.env";
inline constexpr std::string_view kPodSocketFile = "pod.sock";

/// Makes `target` (mode 0755, whatever the umask) in its parent, which must exist: the kubelet
/// makes the volume's directory and records the volume there before it asks. An existing
/// directory is kept; anything else at `target` (a file, a symlink) is kIo, as is a missing parent.
Result<void> makeVolumeDirectory(const std::filesystem::path& target);

/// Writes ports.json and ports.env for `pod` from `leases` (the pod's, possibly none yet).
Result<void> writePortFiles(const std::filesystem::path& target, const PodIdentity& pod,
                            const std::vector<Lease>& leases);

/// Removes the files, the socket (already closed) and `target` itself; what is not there is
/// success. kIo naming the path when something else is left in it.
Result<void> removeVolumeDirectory(const std::filesystem::path& target);

}  // namespace hostport::agent::csi
