#include "hostnet/socket_owner.h"

#include <dirent.h>
#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <charconv>
#include <cstring>
#include <memory>
#include <string_view>
#include <system_error>

#include "common/unique_fd.h"

namespace hostport::hostnet {
namespace {

struct DirCloser {
  void operator()(DIR* dir) const noexcept { closedir(dir); }
};
using DirPtr = std::unique_ptr<DIR, DirCloser>;

constexpr size_t kMaxCommLength = 64;  // the kernel's is 16 (TASK_COMM_LEN); be generous

/// The pid a /proc entry names, or nullopt for anything else ("self", "sys", "1234abc").
std::optional<uint32_t> pidOf(std::string_view name) {
  uint32_t pid = 0;
  const auto [end, ec] = std::from_chars(name.data(), name.data() + name.size(), pid);
  if (ec != std::errc() || end != name.data() + name.size() || pid == 0) return std::nullopt;
  return pid;
}

/// Opens a directory relative to `parentFd` for reading, without following a final symlink.
DirPtr openDirectoryAt(int parentFd, const std::string& path) {
  const int fd = openat(parentFd, path.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (fd < 0) return nullptr;
  DIR* dir = fdopendir(fd);
  if (dir == nullptr) close(fd);
  return DirPtr(dir);
}

/// /proc/<pid>/comm with its newline removed and anything unprintable replaced: a process names
/// itself (prctl PR_SET_NAME), so the text is untrusted and goes into error messages.
std::string readComm(int procFd, uint32_t pid) {
  UniqueFd fd(openat(procFd, (std::to_string(pid) + "/comm").c_str(), O_RDONLY | O_CLOEXEC));
  if (!fd.valid()) return {};
  char buffer[kMaxCommLength];
  ssize_t n = -1;
  do {
    n = read(fd.get(), buffer, sizeof(buffer));
  } while (n < 0 && errno == EINTR);
  if (n <= 0) return {};
  std::string command(buffer, static_cast<size_t>(n));
  while (!command.empty() && (command.back() == '\n' || command.back() == '\0')) {
    command.pop_back();
  }
  for (char& c : command) {
    const auto u = static_cast<unsigned char>(c);
    if (u < 0x20 || u >= 0x7f) c = '?';
  }
  return command;
}

}  // namespace

Result<std::optional<ProcessRef>> findSocketOwner(uint32_t inode,
                                                  const OwnerSearchOptions& options) {
  if (inode == 0) return std::nullopt;  // a kernel socket: no process has a descriptor for it
  UniqueFd procFd(open(options.procRoot.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
  if (!procFd.valid()) {
    const int error = errno;
    return failSystem(ErrorCode::kIo,
                      "cannot open " + options.procRoot + " to find the holder of socket " +
                          std::to_string(inode),
                      error);
  }
  DirPtr procDir = openDirectoryAt(procFd.get(), ".");
  if (!procDir) {
    const int error = errno;
    return failSystem(ErrorCode::kIo, "cannot list " + options.procRoot, error);
  }

  const std::string target = "socket:[" + std::to_string(inode) + "]";
  char link[64];  // "socket:[4294967295]" is 19 bytes; longer links are other things
  size_t examined = 0;
  while (const dirent* process = readdir(procDir.get())) {
    const auto pid = pidOf(process->d_name);
    if (!pid) continue;
    // The process may exit at any point from here on: every failure below just skips it.
    DirPtr fdDir = openDirectoryAt(procFd.get(), std::string(process->d_name) + "/fd");
    if (!fdDir) continue;
    const int fdDirFd = dirfd(fdDir.get());
    while (const dirent* entry = readdir(fdDir.get())) {
      if (entry->d_name[0] == '.') continue;
      if (++examined > options.maxDescriptors) {
        return fail(ErrorCode::kUnavailable,
                    "gave up looking for the holder of socket " + std::to_string(inode) +
                        " after " + std::to_string(options.maxDescriptors) + " descriptors");
      }
      const ssize_t n = readlinkat(fdDirFd, entry->d_name, link, sizeof(link));
      if (n < 0 || static_cast<size_t>(n) != target.size()) continue;
      if (std::memcmp(link, target.data(), target.size()) != 0) continue;
      std::string command = readComm(procFd.get(), *pid);
      if (command.empty() && faccessat(procFd.get(), process->d_name, F_OK, 0) != 0) {
        break;  // it exited under us; another process may share the socket
      }
      return ProcessRef{*pid, std::move(command)};
    }
  }
  return std::nullopt;
}

}  // namespace hostport::hostnet
