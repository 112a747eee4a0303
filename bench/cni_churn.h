#pragma once
// Churn: ADD+DEL pairs started at a fixed rate (open loop, as pods come and go on a busy node,
// not as fast as the last one finished), by several worker threads as a runtime runs several
// sandboxes at once, for a fixed time, reported per window with the agent's memory and state dir
// sampled at the end of each window. The pair itself (two plugin processes) is the caller's.

#include <sys/types.h>

#include <functional>
#include <nlohmann/json.hpp>
#include <string>

namespace hostport::bench {

struct ChurnOptions {
  double pairsPerSecond = 200;
  double seconds = 60;
  double windowSeconds = 10;
  long workers = 8;
  pid_t agentPid = 0;    // 0: no memory samples
  std::string stateDir;  // empty: no state dir samples
};

/// One ADD and its DEL, as timed by the caller; `error` set when either failed.
struct PairResult {
  double addMs = 0;
  double delMs = 0;
  std::string error;
};

/// Runs pair(sequence) for sequence 0, 1, ... each at start + sequence / rate. Returns
/// {"pairsPerSecond","seconds","workers","windows":[{"window","fromS","toS","started",
///  "completed","failures","achievedPairsPerSecond","startLagMs":{summary},"addMs":{summary},
///  "delMs":{summary},"vmRssKiB","vmHwmKiB","stateDirBytes","journalBytes","snapshotBytes"}],
///  "baseline":{the same memory and state dir fields before the first pair},"firstError"}.
nlohmann::json runChurn(const ChurnOptions& options,
                        const std::function<PairResult(long sequence)>& pair);

}  // namespace hostport::bench
