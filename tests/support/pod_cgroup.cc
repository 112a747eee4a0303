#include "tests/support/pod_cgroup.h"

#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <fstream>
#include <sstream>

#include "tests/support/netns.h"

namespace hostport::test {
namespace {

/// The mount points of the cgroup hierarchies a process may join without settings, v2 first.
std::vector<std::filesystem::path> joinableHierarchies() {
  std::vector<std::filesystem::path> v2, v1;
  std::ifstream mountinfo("/proc/self/mountinfo");
  std::string line;
  while (std::getline(mountinfo, line)) {
    // "<id> <parent> <dev> <root> <mount point> <options> [optional...] - <type> <source> <super>"
    const auto dash = line.find(" - ");
    if (dash == std::string::npos) continue;
    std::istringstream before(line.substr(0, dash)), after(line.substr(dash + 3));
    std::string ignored, mountPoint, type, source, super;
    before >> ignored >> ignored >> ignored >> ignored >> mountPoint;
    after >> type >> source >> super;
    if (type == "cgroup2") v2.emplace_back(mountPoint);
    if (type == "cgroup" && super.find("cpuset") == std::string::npos) v1.emplace_back(mountPoint);
  }
  v2.insert(v2.end(), v1.begin(), v1.end());
  return v2;
}

std::vector<std::string> podPath(std::string_view uid, CgroupDriver driver) {
  if (driver == CgroupDriver::kCgroupfs) {
    return {"kubepods", "besteffort", "pod" + std::string(uid), "test"};
  }
  std::string underscored(uid);
  std::ranges::replace(underscored, '-', '_');
  return {"kubepods.slice", "kubepods-besteffort.slice",
          "kubepods-besteffort-pod" + underscored + ".slice", "cri-containerd-test.scope"};
}

}  // namespace

Result<PodCgroup> PodCgroup::create(std::string_view podUid, CgroupDriver driver) {
  std::string tried;
  for (const auto& hierarchy : joinableHierarchies()) {
    const std::filesystem::path parent = hierarchy / uniqueName("hostport-test");
    if (::mkdir(parent.c_str(), 0755) != 0) {
      tried += " " + parent.string() + ": " + std::strerror(errno) + ";";
      continue;
    }
    std::vector<std::filesystem::path> made{parent};
    for (const std::string& component : podPath(podUid, driver)) {
      made.push_back(made.back() / component);
      if (::mkdir(made.back().c_str(), 0755) != 0) {
        const int error = errno;
        made.pop_back();
        PodCgroup partial(std::move(made));  // removes what was made
        return failSystem(ErrorCode::kIo, "mkdir " + (partial.made_.back() / component).string(),
                          error);
      }
    }
    return PodCgroup(std::move(made));
  }
  return fail(ErrorCode::kUnavailable,
              "no cgroup hierarchy a test may write is mounted:" +
                  (tried.empty() ? std::string(" none in /proc/self/mountinfo") : tried));
}

PodCgroup::~PodCgroup() {
  for (auto it = made_.rbegin(); it != made_.rend(); ++it) {
    if (::rmdir(it->c_str()) != 0 && errno != ENOENT) {
      ADD_FAILURE() << "rmdir " << *it << ": " << std::strerror(errno);
    }
  }
}

}  // namespace hostport::test
