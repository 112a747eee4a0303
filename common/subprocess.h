#pragma once
// Running a helper program to its end: its input written, both outputs read, its exit waited for,
// all within a deadline. The plugin installer runs the installed plugin's VERSION through it,
// and nft_context.h runs `nft` for rules with conditions. The exchange over the pipes is its own
// function, for the test support and the benches, which start their programs their own way (in
// a netns, with a parent-death signal, by fork as a runtime does).
//
// Design note: posix_spawn (vfork semantics) and pipes only, no shell. The child inherits the
// calling thread's network namespace, which is how `nft` acts on the netns the caller entered.
// SIGPIPE is blocked on this thread while writing, so a program that exits without reading its
// input makes the write fail with EPIPE instead of killing the caller.

#include <sys/types.h>

#include <chrono>
#include <cstddef>
#include <string>
#include <string_view>
#include <vector>

#include "common/error.h"
#include "common/unique_fd.h"

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

/// The parent's ends of a started program's standard streams.
struct ProgramStreams {
  UniqueFd input;   // its stdin: written, then closed
  UniqueFd output;  // its stdout
  UniqueFd errors;  // its stderr
};

/// Writes `input` to the program's stdin and reads its stdout into `out` and its stderr into `err`
/// (at most `cap` bytes kept of each) until it closes both. With `exitFd` (a pidfd), also until
/// the program exits: what is buffered then is read, and a grandchild that holds the pipes open
/// is not waited for. SIGPIPE is blocked on this thread meanwhile, so a program that exits without
/// reading its input is an EPIPE, not the end of the caller. False when `deadline` passed first;
/// the caller then kills the program.
bool exchangeWithProgram(ProgramStreams& streams, std::string_view input, std::string& out,
                         std::string& err, std::size_t cap,
                         std::chrono::steady_clock::time_point deadline, int exitFd = -1);

/// Runs the program and waits for it. kIo when it cannot be started (the errno as the cause:
/// ENOENT for a missing program); kUnavailable, after killing it, when the deadline passes. A
/// program that runs and fails is an outcome, not an error.
Result<ProgramOutcome> runProgram(const ProgramRun& run);

}  // namespace hostport
