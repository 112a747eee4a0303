#pragma once
// Runs a program to completion, optionally inside a network namespace, the way a container
// runtime runs a CNI plugin: a chosen environment (nothing inherited unless asked), stdin fed
// from a string, stdout and stderr captured, and a hard timeout after which the child is killed.

#include <chrono>
#include <map>
#include <string>
#include <vector>

#include "common/error.h"

namespace hostport::test {

struct Command {
  std::vector<std::string> argv;  // argv[0] is the executable path (no PATH search)
  std::map<std::string, std::string> env;
  std::string stdinData;
  std::string netnsPath;  // empty: the caller's netns
  std::chrono::milliseconds timeout{20'000};
};

struct CommandResult {
  int exitCode = -1;   // -1 when killed by a signal
  int termSignal = 0;  // the signal that ended it, if any
  bool timedOut = false;
  std::string out;
  std::string err;

  bool ok() const { return exitCode == 0 && !timedOut; }
  /// "exit 1; stdout: ...; stderr: ..." for assertion messages.
  std::string describe() const;
};

/// Forks, joins `netnsPath` in the child, and execs argv[0]. An error only when the program could
/// not be started at all; a failing program is a CommandResult with a non-zero exit code.
Result<CommandResult> runCommand(const Command& command);

/// Shorthand: runs `argv` (argv[0] resolved through /usr/sbin:/usr/bin:/sbin:/bin) in `netnsPath`
/// with PATH set, and fails unless it exits 0. The error message holds the output.
Result<std::string> runOk(const std::vector<std::string>& argv, const std::string& netnsPath = {});

}  // namespace hostport::test
