#pragma once
// A pod's cgroup as the kubelet names it (agent/server/pod_cgroup.h), made for a test below a
// parent of its own ("hostport-test-<pid>-<n>") in a cgroup hierarchy that lets a process in
// without setting anything first: the cgroup v2 one when it is mounted, else a v1 one other than
// cpuset (whose cpus and mems must be set before a task may join). The node's own cgroups are
// never written; a process joins through PodCaller (CallerSpec::cgroupProcs).

#include <filesystem>
#include <string>
#include <string_view>
#include <vector>

#include "common/error.h"

namespace hostport::test {

/// The kubelet's two spellings of a pod's cgroup.
enum class CgroupDriver { kSystemd, kCgroupfs };

class PodCgroup {
 public:
  /// .../kubepods.slice/kubepods-besteffort.slice/kubepods-besteffort-pod<uid_>.slice/
  /// cri-containerd-test.scope, or .../kubepods/besteffort/pod<uid>/test.
  static Result<PodCgroup> create(std::string_view podUid, CgroupDriver driver);
  PodCgroup(PodCgroup&& other) noexcept : made_(std::move(other.made_)) { other.made_.clear(); }
  PodCgroup& operator=(PodCgroup&&) = delete;
  PodCgroup(const PodCgroup&) = delete;
  /// Removes what create() made, deepest first: the processes that joined must have exited.
  ~PodCgroup();

  /// The container's cgroup.procs, which a process writes "0" to to join.
  std::string procsPath() const { return (made_.back() / "cgroup.procs").string(); }

 private:
  explicit PodCgroup(std::vector<std::filesystem::path> made) : made_(std::move(made)) {}
  std::vector<std::filesystem::path> made_;  // outermost first
};

}  // namespace hostport::test
