#pragma once
// The two fields of /proc/<pid>/stat that tell one process from another that later gets its pid:
// the state (a zombie has exited) and the start time, in clock ticks after boot (field 22, which
// never changes for a process). The pod socket records them when a caller connects and compares
// before it answers (peer_process.h).

#include <cstdint>
#include <string_view>

#include "common/error.h"

namespace hostport::agent::server {

struct ProcStat {
  char state = '?';        // field 3: 'R', 'S', 'D', 'Z' (zombie), 'X' (dead), ...
  uint64_t startTime = 0;  // field 22
  /// The task has exited (zombie or dead), even if it is not reaped yet. For a process's main
  /// thread that is not yet the process's exit: its other threads may still run (peer_process.h).
  bool exited() const { return state == 'Z' || state == 'X' || state == 'x'; }
  friend bool operator==(const ProcStat&, const ProcStat&) = default;
};

/// Parses the text of /proc/<pid>/stat. The command name (field 2) is in parentheses and may
/// itself hold spaces and ')', so the fields after it are counted from the last ')'.
/// kInvalidArgument naming what is missing or malformed.
Result<ProcStat> parseProcStat(std::string_view text);

}  // namespace hostport::agent::server
