#pragma once
// Running a helper program to its end: its input written, both outputs read, its exit waited for,
// all within a deadline. The plugin installer runs the installed plugin's VERSION through it,
// and nft_context.h runs `nft` for rules with conditions.
//
// Design note: posix_spawn (vfork semantics) and pipes only, no shell. The child inherits the
// calling thread's network namespace, which is how `nft` acts on the netns the caller entered.
// SIGPIPE is blocked on this thread while writing, so a program that exits without reading its
// input makes the write fail with EPIPE instead of killing the caller.

#include <sys/types.h>

#include <chrono>
#include <cstddef>
#include <string>
#include <vector>

#include "common/error.h"

namespace hostport {

struct ProgramRun {
  std::vector<std::string> argv;  // argv[0] is the executable's path (no PATH search)
  std::vector<std::string> env;   // "KEY=value" each; nothing is inherited
  std::string input;              // written to its stdin, which is then closed
  std::chrono::milliseconds deadline{10'000};
  std::size_t outputCap = 1 << 20;  // per stream; more is read and dropped
};

struct ProgramOutcome {
  int status = 0;  // as waitpid() gave it
  std::string out;
  std::string err;

  bool succeeded() const;
  /// "exited 2", "was killed by signal 9".
  std::string describe() const;
};

/// Runs the program and waits for it. kIo when it cannot be started (the errno as the cause:
/// ENOENT for a missing program); kUnavailable, after killing it, when the deadline passes. A
/// program that runs and fails is an outcome, not an error.
Result<ProgramOutcome> runProgram(const ProgramRun& run);

}  // namespace hostport
