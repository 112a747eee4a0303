#include "tests/support/netns.h"

#include <fcntl.h>
#include <sched.h>
#include <signal.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstdlib>
#include <filesystem>
#include <mutex>
#include <thread>

#include "common/unique_fd.h"
#include "tests/support/spawn.h"
#include "tests/support/subprocess.h"
#include "tests/support/temp_dir.h"

namespace hostport::test {
namespace {

// Removes /run/netns/hpt-<pid>-* of processes that no longer exist (a test killed by a timeout
// cannot run its destructors). Namespaces of live processes, ours or not, are left alone.
void reapStaleNamespaces() {
  std::error_code error;
  for (const auto& entry : std::filesystem::directory_iterator("/run/netns", error)) {
    const std::string name = entry.path().filename();
    if (isLeftByAGoneProcess(name)) (void)runOk({"ip", "netns", "delete", name});
  }
}

// Brings `lo` up in the calling thread's netns: a new netns starts with it down, and without it
// 127.0.0.1 and ::1 are not local addresses.
Result<void> bringLoopbackUp() {
  const char* failedStep = nullptr;
  if (const int error = bringLoopbackUpRaw(&failedStep); error != 0) {
    return failSystem(ErrorCode::kIo, failedStep, error);
  }
  return {};
}

}  // namespace

bool haveRoot() { return ::geteuid() == 0; }

std::string uniqueName(std::string_view tag) {
  static std::atomic<unsigned> counter{0};
  const std::string suffix =
      "-" + std::to_string(::getpid()) + "-" + std::to_string(counter.fetch_add(1));
  const size_t room = suffix.size() < 15 ? 15 - suffix.size() : 1;
  return std::string(tag.substr(0, room)) + suffix;
}

Result<void> runInNetnsPath(const std::string& netnsPath, const std::function<void()>& fn) {
  UniqueFd fd(::open(netnsPath.c_str(), O_RDONLY | O_CLOEXEC));
  if (!fd.valid()) {
    return failSystem(ErrorCode::kIo, "open " + netnsPath, errno);
  }
  int setnsError = 0;
  std::thread thread([&] {
    if (::setns(fd.get(), CLONE_NEWNET) != 0) {
      setnsError = errno;
      return;
    }
    fn();
  });
  thread.join();
  if (setnsError != 0) {
    return failSystem(ErrorCode::kIo, "setns " + netnsPath, setnsError);
  }
  return {};
}

Result<void> inPrivateNetns(const std::function<void()>& fn) {
  Result<void> entered;
  std::thread thread([&] {
    if (::unshare(CLONE_NEWNET) != 0) {
      entered = failSystem(ErrorCode::kIo, "unshare(CLONE_NEWNET)", errno);
      return;
    }
    if (auto up = bringLoopbackUp(); !up) {
      entered = withContext(std::move(up.error()), "in a private netns");
      return;
    }
    fn();
  });
  thread.join();
  return entered;
}

Result<Netns> Netns::create() {
  static std::once_flag reaped;
  std::call_once(reaped, reapStaleNamespaces);
  // "hpt-" + pid + counter stays within 15 characters for pids up to 7 digits.
  Netns netns(uniqueName("hpt"));
  if (auto added = runOk({"ip", "netns", "add", netns.name_}); !added) {
    netns.name_.clear();  // nothing to delete
    return std::unexpected(added.error());
  }
  HOSTPORT_TRY_VOID(netns.ip({"link", "set", "lo", "up"}));
  return netns;
}

Netns& Netns::operator=(Netns&& other) noexcept {
  if (this != &other) {
    Netns dying(std::exchange(name_, std::exchange(other.name_, {})));
  }
  return *this;
}

Netns::~Netns() {
  if (name_.empty()) return;
  (void)runOk({"ip", "netns", "delete", name_});
}

Result<std::string> Netns::ip(const std::vector<std::string>& args) const {
  std::vector<std::string> argv{"ip", "-n", name_};
  argv.insert(argv.end(), args.begin(), args.end());
  return runOk(argv);
}

Result<std::string> Netns::exec(const std::vector<std::string>& argv) const {
  return runOk(argv, path());
}

}  // namespace hostport::test
