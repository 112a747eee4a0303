// hostport-bench-reconcile-passes: how long hostport-agent's reconciler takes for a pass that
// finds nothing to repair (its steady-state cost), read from the agent's own metrics, of both
// kinds: a pass that finds the nf_tables generation where its last compare left it (nothing can
// have changed; it compares nothing), and a pass that compares the table with every lease.
//
//   --socket PATH [--samples 10] [--timeout-s 120] [--poll-ms 20] [--nudge-netns PATH]
//
// Polls GET /metrics through AgentClient and, each time hostport_reconciles_total has moved on by
// one, takes the pass: when hostport_reconciles_unchanged_total moved with it, an unchanged
// pass (hostport_reconcile_last_duration_seconds), else a compare
// (hostport_reconcile_last_compare_duration_seconds); nanosecond precision, where the log's
// duration_ms is whole milliseconds. A pass during which hostport_repairs_total moved repaired
// something and is not a steady-state sample; a poll that finds the counter moved by more than
// one has missed passes and takes none of them. With --nudge-netns (the agent's netns), after
// each unchanged sample a commit to a table of its own there (`nft add/delete table ip
// hostport_bench_nudge`) moves the generation on, so the next pass compares: samples alternate.
// With --once it takes no samples and prints what /metrics says once a first pass has ended:
//   {"passes", "unchanged", "lastPassMs", "lastCompareMs", "repairs"}
// (after a start, before the first periodic pass: the start-up pass).
// Run the agent with a short --table-repair-interval. Prints one JSON object:
//   {"passMs": {summary of compares}, "unchangedMs": {summary}, "samplesMs": [...],
//    "unchangedSamplesMs": [...], "skippedRepairing": k, "missedPasses": m}

#include <cstdlib>
#include <iostream>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "agent/api/agent_client.h"
#include "bench/bench_util.h"

namespace hostport::bench {
namespace {

/// The figures of one /metrics answer this benchmark reads.
struct ReconcileMetrics {
  long passes = -1;
  long unchanged = -1;
  double lastPassSeconds = -1;
  double lastCompareSeconds = -1;
  double repairs = 0;  // every kind together
};

ReconcileMetrics parseMetrics(const std::string& text) {
  ReconcileMetrics metrics;
  std::istringstream lines(text);
  std::string line;
  while (std::getline(lines, line)) {
    if (line.starts_with('#')) continue;
    const auto space = line.rfind(' ');
    if (space == std::string::npos) continue;
    const std::string name = line.substr(0, space);
    const double value = std::strtod(line.c_str() + space + 1, nullptr);
    if (name == "hostport_reconciles_total") {
      metrics.passes = static_cast<long>(value);
    } else if (name == "hostport_reconciles_unchanged_total") {
      metrics.unchanged = static_cast<long>(value);
    } else if (name == "hostport_reconcile_last_duration_seconds") {
      metrics.lastPassSeconds = value;
    } else if (name == "hostport_reconcile_last_compare_duration_seconds") {
      metrics.lastCompareSeconds = value;
    } else if (name.starts_with("hostport_repairs_total{")) {
      metrics.repairs += value;
    }
  }
  if (metrics.passes < 0 || metrics.unchanged < 0 || metrics.lastPassSeconds < 0 ||
      metrics.lastCompareSeconds < 0) {
    die("/metrics lacks the hostport_reconcile* figures (is the reconciler on?)");
  }
  return metrics;
}

/// A commit to a table of the benchmark's own in the agent's netns: the generation moves on.
void nudgeGeneration(const std::string& netns, bool add) {
  const std::string command = "nsenter --net=" + netns + " nft " + (add ? "add" : "delete") +
                              " table ip hostport_bench_nudge";
  if (std::system(command.c_str()) != 0) die("failed: " + command);
}

ReconcileMetrics readMetrics(const agent::api::AgentClient& client) {
  auto text = client.getText("/metrics");
  if (!text) die("GET /metrics: " + text.error().message);
  return parseMetrics(*text);
}

}  // namespace
}  // namespace hostport::bench

int main(int argc, char** argv) {
  using namespace hostport::bench;
  const Args args(argc, argv);
  if (args.has("help") || !args.has("socket")) {
    std::cout << "usage: hostport-bench-reconcile-passes --socket PATH [--samples 10] "
                 "[--timeout-s 120] [--poll-ms 20] [--nudge-netns PATH] [--once]\n";
    return args.has("help") ? 0 : 2;
  }
  const auto samples = static_cast<std::size_t>(std::max(1L, args.getLong("samples", 10)));
  const double timeoutMs = args.getDouble("timeout-s", 120) * 1000;
  const std::chrono::milliseconds pollEvery(std::max(1L, args.getLong("poll-ms", 20)));
  const std::string nudgeNetns = args.get("nudge-netns");
  const auto client =
      hostport::agent::api::AgentClient::forSocket(args.get("socket"), std::chrono::seconds(10));
  if (args.has("once")) {
    // The start-up pass runs as the socket starts to serve: wait for it to end.
    ReconcileMetrics now = readMetrics(client);
    for (const auto waited = Clock::now(); now.passes < 1 && msSince(waited) < timeoutMs;) {
      std::this_thread::sleep_for(pollEvery);
      now = readMetrics(client);
    }
    std::cout << nlohmann::json{{"passes", now.passes},
                                {"unchanged", now.unchanged},
                                {"lastPassMs", now.lastPassSeconds * 1000},
                                {"lastCompareMs", now.lastCompareSeconds * 1000},
                                {"repairs", now.repairs}}
                     .dump()
              << std::endl;
    return 0;
  }
  std::vector<double> compareMs;
  std::vector<double> unchangedMs;
  long skippedRepairing = 0;
  long missedPasses = 0;
  bool nudged = false;
  const auto enough = [&] {
    return compareMs.size() >= samples && (nudgeNetns.empty() || unchangedMs.size() >= samples);
  };
  const auto started = Clock::now();
  ReconcileMetrics last = readMetrics(client);
  while (!enough()) {
    if (msSince(started) > timeoutMs) {
      die("only " + std::to_string(compareMs.size()) + " compares and " +
          std::to_string(unchangedMs.size()) + " unchanged passes in " +
          std::to_string(static_cast<long>(timeoutMs / 1000)) + " s");
    }
    std::this_thread::sleep_for(pollEvery);
    const ReconcileMetrics now = readMetrics(client);
    if (now.passes == last.passes) continue;
    const long moved = now.passes - last.passes;
    const bool unchanged = now.unchanged - last.unchanged == moved;
    if (moved > 1) {
      missedPasses += moved;
    } else if (now.repairs != last.repairs) {
      ++skippedRepairing;
    } else if (unchanged) {
      unchangedMs.push_back(now.lastPassSeconds * 1000);
    } else {
      compareMs.push_back(now.lastCompareSeconds * 1000);
    }
    last = now;
    if (!nudgeNetns.empty() && unchanged && compareMs.size() < samples) {
      nudgeGeneration(nudgeNetns, nudged = !nudged);
    }
  }
  if (nudged) nudgeGeneration(nudgeNetns, false);
  const nlohmann::json out = {
      {"passMs", nlohmann::json::parse(summaryJson(compareMs))},
      {"unchangedMs",
       unchangedMs.empty() ? nlohmann::json() : nlohmann::json::parse(summaryJson(unchangedMs))},
      {"samplesMs", compareMs},
      {"unchangedSamplesMs", unchangedMs},
      {"skippedRepairing", skippedRepairing},
      {"missedPasses", missedPasses}};
  std::cout << out.dump() << std::endl;
  return 0;
}
