#include "agent/csi/volume_files.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>

#include "agent/api/json_codec.h"
#include "agent/api/pod_codec.h"
#include "common/atomic_file.h"
#include "common/unique_fd.h"

namespace hostport::agent::csi {

Result<void> makeVolumeDirectory(const std::filesystem::path& target) {
  const std::filesystem::path parent = target.parent_path();
  UniqueFd parentFd(::open(parent.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC));
  if (!parentFd.valid()) {
    return failSystem(ErrorCode::kIo, "open the volume's directory " + parent.string(), errno);
  }
  const std::string name = target.filename().string();
  if (::mkdirat(parentFd.get(), name.c_str(), 0755) != 0 && errno != EEXIST) {
    return failSystem(ErrorCode::kIo, "mkdir " + target.string(), errno);
  }
  UniqueFd dir(
      ::openat(parentFd.get(), name.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC));
  if (!dir.valid()) return failSystem(ErrorCode::kIo, "open " + target.string(), errno);
  // mkdir's mode went through the umask; and an existing one is made what a new one would be.
  if (::fchmod(dir.get(), 0755) != 0) {
    return failSystem(ErrorCode::kIo, "chmod " + target.string(), errno);
  }
  return {};
}

Result<void> writePortFiles(const std::filesystem::path& target, const PodIdentity& pod,
                            const std::vector<Lease>& leases) {
  HOSTPORT_TRY_VOID(writeFileAtomically(
      target, kPortsJsonFile, api::dumpBody(api::selfBody(pod, leases)), Durability::kCache, 0644));
  return writeFileAtomically(target, kPortsEnvFile, api::envText(leases), Durability::kCache, 0644);
}

namespace {

/// A file this driver puts in a volume: its three, and a temporary one a crash left mid-write
/// (atomic_file.h's ".<name>.tmp-<pid>").
bool isOurs(std::string_view name) {
  for (const std::string_view file : {kPortsJsonFile, kPortsEnvFile, kPodSocketFile}) {
    if (name == file || name.starts_with("." + std::string(file) + ".tmp-")) return true;
  }
  return false;
}

}  // namespace

Result<void> removeVolumeDirectory(const std::filesystem::path& target) {
  std::error_code error;
  for (std::filesystem::directory_iterator entry(target, error), end; !error && entry != end;
       entry.increment(error)) {
    const std::string name = entry->path().filename().string();
    if (isOurs(name)) HOSTPORT_TRY_VOID(removeFile(entry->path()));
  }
  if (error && error != std::errc::no_such_file_or_directory) {
    return failSystem(ErrorCode::kIo, "list " + target.string(), error.value());
  }
  if (::rmdir(target.c_str()) != 0 && errno != ENOENT) {
    return failSystem(ErrorCode::kIo, "rmdir " + target.string() + " (the driver's files removed)",
                      errno);
  }
  return {};
}

}  // namespace hostport::agent::csi
