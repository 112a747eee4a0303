// hostport-bench-reconcile-passes: how long hostport-agent's reconciler takes for a pass that
// finds nothing to repair (its steady-state cost), read from the agent's own metrics.
//
//   --socket PATH [--samples 10] [--timeout-s 120] [--poll-ms 20]
//
// Polls GET /metrics through AgentClient and, each time hostport_reconciles_total has moved on,
// takes hostport_reconcile_last_duration_seconds (nanosecond precision; the log's duration_ms is
// whole milliseconds, too coarse for small tables). A pass during which
// hostport_repairs_total moved repaired something and is not a steady-state sample; a poll that
// finds the counter moved by more than one has missed passes and keeps only the last one.
// Run the agent with a short --table-repair-interval. Prints one JSON object:
//   {"passMs": {summary}, "samplesMs": [...], "skippedRepairing": k, "missedPasses": m}

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
  double lastPassSeconds = -1;
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
    } else if (name == "hostport_reconcile_last_duration_seconds") {
      metrics.lastPassSeconds = value;
    } else if (name.starts_with("hostport_repairs_total{")) {
      metrics.repairs += value;
    }
  }
  if (metrics.passes < 0 || metrics.lastPassSeconds < 0) {
    die("/metrics has no hostport_reconciles_total or hostport_reconcile_last_duration_seconds "
        "(is the reconciler on?)");
  }
  return metrics;
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
                 "[--timeout-s 120] [--poll-ms 20]\n";
    return args.has("help") ? 0 : 2;
  }
  const auto samples = static_cast<std::size_t>(std::max(1L, args.getLong("samples", 10)));
  const double timeoutMs = args.getDouble("timeout-s", 120) * 1000;
  const std::chrono::milliseconds pollEvery(std::max(1L, args.getLong("poll-ms", 20)));
  const auto client =
      hostport::agent::api::AgentClient::forSocket(args.get("socket"), std::chrono::seconds(10));
  std::vector<double> passMs;
  long skippedRepairing = 0;
  long missedPasses = 0;
  const auto started = Clock::now();
  ReconcileMetrics last = readMetrics(client);
  while (passMs.size() < samples) {
    if (msSince(started) > timeoutMs) {
      die("only " + std::to_string(passMs.size()) + " of " + std::to_string(samples) +
          " passes in " + std::to_string(static_cast<long>(timeoutMs / 1000)) + " s");
    }
    std::this_thread::sleep_for(pollEvery);
    const ReconcileMetrics now = readMetrics(client);
    if (now.passes == last.passes) continue;
    missedPasses += now.passes - last.passes - 1;
    if (now.repairs != last.repairs) {
      ++skippedRepairing;
    } else {
      passMs.push_back(now.lastPassSeconds * 1000);
    }
    last = now;
  }
  const nlohmann::json out = {{"passMs", nlohmann::json::parse(summaryJson(passMs))},
                              {"samplesMs", passMs},
                              {"skippedRepairing", skippedRepairing},
                              {"missedPasses", missedPasses}};
  std::cout << out.dump() << std::endl;
  return 0;
}
