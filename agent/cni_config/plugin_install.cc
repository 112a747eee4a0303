#include "agent/cni_config/plugin_install.h"

#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <nlohmann/json.hpp>
#include <vector>

#include "common/atomic_file.h"
#include "common/quote.h"
#include "common/unique_fd.h"

namespace hostport::agent::cni_config {
namespace {

constexpr std::string_view kPluginName = "hostport";
constexpr std::size_t kMaxAnswer = 64 * 1024;
// The newest version we speak: a plugin that cannot answer it is not this one.
constexpr std::string_view kVersionRequest = R"({"cniVersion":"1.1.0"})";

struct Pipe {
  UniqueFd read;
  UniqueFd write;
};

Result<Pipe> makePipe() {
  int fds[2];
  if (::pipe2(fds, O_CLOEXEC) != 0) return failSystem(ErrorCode::kIo, "pipe", errno);
  return Pipe{UniqueFd(fds[0]), UniqueFd(fds[1])};
}

/// Reads `fd` to its end, or until the deadline or the cap; false when the deadline passed.
bool readUntil(int fd, std::chrono::steady_clock::time_point until, std::string& out) {
  char buffer[4096];
  for (;;) {
    const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
        until - std::chrono::steady_clock::now());
    if (left.count() <= 0) return false;
    pollfd ready{fd, POLLIN, 0};
    const int polled = ::poll(&ready, 1, static_cast<int>(left.count()));
    if (polled < 0 && errno == EINTR) continue;
    if (polled <= 0) return polled == 0 ? false : true;
    const ssize_t got = ::read(fd, buffer, sizeof buffer);
    if (got < 0 && errno == EINTR) continue;
    if (got <= 0) return true;
    out.append(buffer, static_cast<std::size_t>(got));
    if (out.size() > kMaxAnswer) return true;
  }
}

/// Writes `bytes` to a pipe whose reader may be gone (a plugin that exits without reading its
/// stdin): EPIPE then, not a SIGPIPE that would kill the installer. SIGPIPE is blocked on this
/// thread meanwhile, and one it raised is taken off before the mask is restored.
void writeIgnoringClosedReader(int fd, std::string_view bytes) {
  sigset_t pipe, previous;
  sigemptyset(&pipe);
  sigaddset(&pipe, SIGPIPE);
  pthread_sigmask(SIG_BLOCK, &pipe, &previous);
  const bool raised = ::write(fd, bytes.data(), bytes.size()) < 0 && errno == EPIPE;
  if (raised && !sigismember(&previous, SIGPIPE)) {
    const timespec now{0, 0};
    while (sigtimedwait(&pipe, nullptr, &now) < 0 && errno == EINTR) {
    }
  }
  pthread_sigmask(SIG_SETMASK, &previous, nullptr);
}

}  // namespace

Result<std::string> pluginVersion(const std::filesystem::path& plugin,
                                  std::chrono::milliseconds deadline) {
  HOSTPORT_TRY(Pipe input, makePipe());
  HOSTPORT_TRY(Pipe output, makePipe());
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_adddup2(&actions, input.read.get(), STDIN_FILENO);
  posix_spawn_file_actions_adddup2(&actions, output.write.get(), STDOUT_FILENO);
  const std::string program = plugin.string();
  std::vector<char*> argv = {const_cast<char*>(program.c_str()), nullptr};
  // VERSION needs nothing else; the runtime's own environment is not ours to pass on.
  std::vector<char*> envp = {const_cast<char*>("CNI_COMMAND=VERSION"),
                             const_cast<char*>("PATH=/usr/sbin:/usr/bin:/sbin:/bin"), nullptr};
  pid_t pid = 0;
  const int spawned =
      ::posix_spawn(&pid, program.c_str(), &actions, nullptr, argv.data(), envp.data());
  posix_spawn_file_actions_destroy(&actions);
  if (spawned != 0) return failSystem(ErrorCode::kIo, "cannot run " + program, spawned);
  input.read.reset();
  output.write.reset();
  writeIgnoringClosedReader(input.write.get(), kVersionRequest);
  input.write.reset();

  std::string answer;
  const bool inTime =
      readUntil(output.read.get(), std::chrono::steady_clock::now() + deadline, answer);
  if (!inTime) ::kill(pid, SIGKILL);
  int status = 0;
  while (::waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  if (!inTime) {
    return fail(ErrorCode::kUnavailable, program + " did not answer VERSION within " +
                                             std::to_string(deadline.count()) + " ms");
  }
  if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
    // 127: the loader could not start it (a missing library), the usual failure on a node.
    const std::string how = WIFEXITED(status)
                                ? "exited " + std::to_string(WEXITSTATUS(status))
                                : "was killed by signal " + std::to_string(WTERMSIG(status));
    return fail(ErrorCode::kKernel, program + " " + how + " on VERSION: " + quoteText(answer));
  }
  const auto parsed = nlohmann::json::parse(answer, nullptr, false);
  if (parsed.is_discarded() || !parsed.is_object() || !parsed.contains("supportedVersions")) {
    return fail(ErrorCode::kDecode,
                program + " answered VERSION with no CNI version result: " + quoteText(answer));
  }
  return parsed.dump();
}

Result<InstalledPlugin> installPlugin(const std::filesystem::path& binary,
                                      const std::filesystem::path& binDir,
                                      std::chrono::milliseconds deadline) {
  auto copied = copyFileAtomically(binary, binDir, kPluginName, Durability::kDurable, 0755);
  if (!copied) return withContext(copied.error(), "installing " + binary.string());
  const auto installed = binDir / kPluginName;
  HOSTPORT_TRY(std::string version, pluginVersion(installed, deadline));
  return InstalledPlugin{installed, std::move(version)};
}

}  // namespace hostport::agent::cni_config
