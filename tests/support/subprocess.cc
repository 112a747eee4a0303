#include "tests/support/subprocess.h"

#include <fcntl.h>
#include <signal.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <limits>

#include "common/subprocess.h"
#include "common/unique_fd.h"
#include "tests/support/spawn.h"

namespace hostport::test {
namespace {

constexpr const char* kSearchPath = "/usr/sbin:/usr/bin:/sbin:/bin";

struct Pipe {
  UniqueFd read;
  UniqueFd write;
};

Result<Pipe> makePipe() {
  int fds[2];
  if (::pipe2(fds, O_CLOEXEC) != 0) return failSystem(ErrorCode::kIo, "pipe2", errno);
  return Pipe{UniqueFd(fds[0]), UniqueFd(fds[1])};
}

}  // namespace

std::string CommandResult::describe() const {
  std::string text = timedOut     ? "timed out"
                     : termSignal ? "killed by signal " + std::to_string(termSignal)
                                  : "exit " + std::to_string(exitCode);
  return text + "; stdout: " + out + "; stderr: " + err;
}

Result<CommandResult> runCommand(const Command& command) {
  if (command.argv.empty()) return fail(ErrorCode::kInvalidArgument, "empty argv");

  std::vector<std::string> env;
  for (const auto& [key, value] : command.env) env.push_back(key + "=" + value);
  auto in = makePipe();
  auto out = makePipe();
  auto err = makePipe();
  if (!in || !out || !err) return fail(ErrorCode::kIo, "cannot create pipes");

  HOSTPORT_TRY(const pid_t pid,
               spawn({.argv = command.argv,
                      .env = std::move(env),
                      .netns = command.netnsPath.empty() ? SpawnNetns::kCallers : SpawnNetns::kJoin,
                      .netnsPath = command.netnsPath,
                      .stdinFd = in->read.get(),
                      .stdoutFd = out->write.get(),
                      .stderrFd = err->write.get()}));
  UniqueFd pidfd(static_cast<int>(::syscall(SYS_pidfd_open, pid, 0)));
  in->read.reset();
  out->write.reset();
  err->write.reset();

  CommandResult result;
  ProgramStreams streams{std::move(in->write), std::move(out->read), std::move(err->read)};
  // Without a pidfd (kernels before 5.3), the exchange ends when the program's outputs close.
  result.timedOut = !exchangeWithProgram(
      streams, command.stdinData, result.out, result.err, std::numeric_limits<std::size_t>::max(),
      std::chrono::steady_clock::now() + command.timeout, pidfd.get());

  int status = 0;
  if (result.timedOut) ::kill(pid, SIGKILL);
  while (::waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  if (WIFEXITED(status)) result.exitCode = WEXITSTATUS(status);
  if (WIFSIGNALED(status)) result.termSignal = WTERMSIG(status);
  return result;
}

Result<std::string> runOk(const std::vector<std::string>& argv, const std::string& netnsPath) {
  Command command{.argv = argv, .env = {{"PATH", kSearchPath}}, .netnsPath = netnsPath};
  if (!argv.empty() && argv[0].find('/') == std::string::npos) {
    for (const char* dir : {"/usr/sbin", "/usr/bin", "/sbin", "/bin"}) {
      std::filesystem::path candidate = std::filesystem::path(dir) / argv[0];
      if (::access(candidate.c_str(), X_OK) == 0) {
        command.argv[0] = candidate;
        break;
      }
    }
  }
  HOSTPORT_TRY(CommandResult result, runCommand(command));
  std::string line;
  for (const auto& arg : argv) line += (line.empty() ? "" : " ") + arg;
  if (!result.ok()) return fail(ErrorCode::kInternal, line + ": " + result.describe());
  return std::move(result.out);
}

}  // namespace hostport::test
