#include "cni-plugin/detached_teardown.h"

#include <fcntl.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <thread>

#include "cni-plugin/netlink_keeper.h"

namespace hostport::cni {

void exitLeavingTeardownToChild(int exitCode, std::ostream& out, std::ostream& err,
                                const std::string& stateDir) {
  out.flush();
  err.flush();
  if (handToKeeper(stateDir, netfilterSockets())) std::_Exit(exitCode);
  const pid_t child = fork();
  if (child < 0) return;
  if (child > 0) std::_Exit(exitCode);
  // The runtime reads stdout and stderr to their end: nothing of ours may hold them open.
  const int devNull = open("/dev/null", O_RDWR | O_CLOEXEC);
  if (devNull >= 0) {
    for (const int stream : {STDIN_FILENO, STDOUT_FILENO, STDERR_FILENO}) dup2(devNull, stream);
    close(devNull);
  } else {
    for (const int stream : {STDIN_FILENO, STDOUT_FILENO, STDERR_FILENO}) close(stream);
  }
  std::error_code ignored;
  std::filesystem::create_directories(stateDir, ignored);
  if (keepNetlinkSockets(stateDir)) return;
  // A grace period is ~10-30 ms on a quiet node; this leaves room for a loaded one.
  constexpr auto kPastAGracePeriod = std::chrono::milliseconds(100);
  std::this_thread::sleep_for(kPastAGracePeriod);
}

}  // namespace hostport::cni
