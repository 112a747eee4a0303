#pragma once
// Which pod a process belongs to, read from the cgroups the kernel lists for it
// (/proc/<pid>/cgroup): how the pod socket knows a hostNetwork pod, which shares the node's
// network namespace with every node process (docs/design.md, "The pod socket").
//
// The kubelet puts each pod's containers under a cgroup of the pod, named after its UID, in one
// of two spellings, the same in cgroup v1 and v2:
//  - the systemd driver: a slice whose name is its parents' joined by '-', with the UID's '-'
//    written '_': .../kubepods.slice/kubepods-burstable.slice/
//    kubepods-burstable-pod1b4e28ba_2fa1_11d2_883f_0016d3cca427.slice/cri-containerd-<id>.scope;
//  - the cgroupfs driver: a directory pod<uid> below kubepods (and its QoS class):
//    .../kubepods/burstable/pod1b4e28ba-2fa1-11d2-883f-0016d3cca427/<id>.
// A path may start above the agent's own cgroup namespace ("/../../kubepods-besteffort.slice/...")
// or below a --cgroup-root; only the pod's component counts.
//
// Trust: only a process allowed to write a pod's cgroup.procs (root on the node, outside any
// container's read-only /sys/fs/cgroup) can enter that pod's cgroup, and such a process could
// read the pod's ports anyway. A process that may make cgroups below its own (a delegated
// subtree) could make one named after another pod: a path that names two pods is refused, and a
// caller whose cgroup lines name different pods too.

#include <optional>
#include <string>
#include <string_view>

#include "common/error.h"

namespace hostport::agent::server {

/// The UID of the pod whose cgroup `procCgroup` (the text of /proc/<pid>/cgroup: v1 lines
/// "<id>:<controllers>:<path>", the v2 line "0::<path>") places the process in; nullopt when no
/// line names a pod. kUnavailable when one path names two pods or two lines name different ones.
Result<std::optional<std::string>> podUidOfCgroups(std::string_view procCgroup);

}  // namespace hostport::agent::server
