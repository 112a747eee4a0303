#pragma once
// Putting the plugin binary where the runtime finds it: what the DaemonSet's init container runs
// (`hostportctl install-plugin`) before the agent starts. The runtime execs <cniBinDir>/hostport
// for every pod, at any moment, so the copy must never be seen half written; and a binary that
// cannot run on this node (a missing library, the wrong architecture) must fail the install, and
// so the pod, loudly, instead of failing every pod's ADD later.

#include <chrono>
#include <filesystem>
#include <string>

#include "common/error.h"

namespace hostport::agent::cni_config {

/// What the installed binary answered to CNI_COMMAND=VERSION.
struct InstalledPlugin {
  std::filesystem::path path;
  std::string version;  // its VERSION output, one JSON line
};

/// Copies `binary` to <binDir>/hostport (a temp name in the same dir, fsync, rename, fsync of the
/// dir; mode 0755), then runs the installed file with CNI_COMMAND=VERSION and checks that it
/// answers with a CNI version result within `deadline`. The copy stays in place when the check
/// fails (it replaced the old one already); the error says what the binary answered.
Result<InstalledPlugin> installPlugin(const std::filesystem::path& binary,
                                      const std::filesystem::path& binDir,
                                      std::chrono::milliseconds deadline);

/// Runs `plugin` with CNI_COMMAND=VERSION and its config on stdin; its answer, or why not.
Result<std::string> pluginVersion(const std::filesystem::path& plugin,
                                  std::chrono::milliseconds deadline);

}  // namespace hostport::agent::cni_config
