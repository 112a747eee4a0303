#include "bench/cni_churn.h"

#include <algorithm>
#include <atomic>
#include <cmath>
#include <condition_variable>
#include <filesystem>
#include <fstream>
#include <mutex>
#include <thread>
#include <vector>

#include "bench/bench_util.h"

namespace hostport::bench {
namespace {

using nlohmann::json;

/// The agent's memory and the state dir's files, now.
json footprint(const ChurnOptions& options) {
  json out = json::object();
  if (options.agentPid > 0) {
    out["vmRssKiB"] = procStatusKiB(options.agentPid, "VmRSS");
    out["vmHwmKiB"] = procStatusKiB(options.agentPid, "VmHWM");
  }
  if (!options.stateDir.empty()) {
    std::uintmax_t all = 0;
    std::uintmax_t journal = 0;
    std::uintmax_t snapshot = 0;
    std::error_code error;
    for (const auto& entry : std::filesystem::directory_iterator(options.stateDir, error)) {
      std::error_code sizeError;
      if (!entry.is_regular_file(sizeError)) continue;
      const std::uintmax_t size = entry.file_size(sizeError);
      if (sizeError) continue;  // compaction renamed or removed it meanwhile
      all += size;
      const std::string name = entry.path().filename().string();
      if (name.starts_with("journal")) journal += size;
      if (name.starts_with("snapshot")) snapshot += size;
    }
    out["stateDirBytes"] = all;
    out["journalBytes"] = journal;
    out["snapshotBytes"] = snapshot;
  }
  return out;
}

/// What the workers record for one pair; window by its scheduled start.
struct Sample {
  double scheduledS = 0;
  double finishedS = 0;
  double lagMs = 0;
  PairResult result;
};

}  // namespace

json runChurn(const ChurnOptions& options, const std::function<PairResult(long sequence)>& pair) {
  const double rate = std::max(0.1, options.pairsPerSecond);
  const long total = static_cast<long>(std::floor(options.seconds * rate));
  const long windows =
      std::max(1L, static_cast<long>(std::ceil(options.seconds / options.windowSeconds)));
  std::vector<Sample> samples(static_cast<std::size_t>(total));
  std::atomic<long> next{0};
  const json baseline = footprint(options);
  const auto started = Clock::now();
  const auto at = [&](double seconds) {
    return started +
           std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(seconds));
  };

  // The footprint at the end of each window, taken while the pairs go on.
  std::vector<json> footprints(static_cast<std::size_t>(windows));
  std::mutex mu;
  std::condition_variable stop;
  bool stopping = false;
  std::thread sampler([&] {
    for (long w = 0; w < windows; ++w) {
      const double end =
          std::min(options.seconds, static_cast<double>(w + 1) * options.windowSeconds);
      std::unique_lock lock(mu);
      // Once the pairs are done, the windows not sampled yet get the footprint of that moment.
      stop.wait_until(lock, at(end), [&] { return stopping; });
      lock.unlock();
      footprints[static_cast<std::size_t>(w)] = footprint(options);
    }
  });

  std::vector<std::thread> workers;
  for (long t = 0; t < std::max(1L, options.workers); ++t) {
    workers.emplace_back([&] {
      for (;;) {
        const long i = next++;
        if (i >= total) return;
        const double scheduledS = static_cast<double>(i) / rate;
        std::this_thread::sleep_until(at(scheduledS));
        Sample& sample = samples[static_cast<std::size_t>(i)];
        sample.scheduledS = scheduledS;
        sample.lagMs = msSince(at(scheduledS));
        sample.result = pair(i);
        sample.finishedS = msSince(started) / 1000;
      }
    });
  }
  for (auto& worker : workers) worker.join();
  const double elapsedS = msSince(started) / 1000;
  {
    std::lock_guard lock(mu);
    stopping = true;
  }
  stop.notify_all();
  sampler.join();

  json out = {{"pairsPerSecond", rate},
              {"seconds", options.seconds},
              {"elapsedSeconds", elapsedS},
              {"windowSeconds", options.windowSeconds},
              {"workers", options.workers},
              {"pairs", total},
              {"baseline", baseline},
              {"end", footprint(options)},
              {"firstError", ""}};
  json windowList = json::array();
  for (long w = 0; w < windows; ++w) {
    const double from = static_cast<double>(w) * options.windowSeconds;
    const double to = std::min(options.seconds, from + options.windowSeconds);
    std::vector<double> adds, dels, lags;
    long started = 0;
    long completed = 0;
    long failures = 0;
    for (const Sample& sample : samples) {
      if (sample.finishedS >= from && sample.finishedS < to) ++completed;
      if (sample.scheduledS < from || sample.scheduledS >= to) continue;
      ++started;
      lags.push_back(sample.lagMs);
      if (!sample.result.error.empty()) {
        ++failures;
        if (out["firstError"] == "") out["firstError"] = sample.result.error;
        continue;
      }
      adds.push_back(sample.result.addMs);
      dels.push_back(sample.result.delMs);
    }
    json window = {{"window", w},
                   {"fromS", from},
                   {"toS", to},
                   {"started", started},
                   {"completed", completed},
                   {"failures", failures},
                   {"achievedPairsPerSecond", static_cast<double>(completed) / (to - from)},
                   {"startLagMs", json::parse(summaryJson(lags))},
                   {"addMs", json::parse(summaryJson(adds))},
                   {"delMs", json::parse(summaryJson(dels))}};
    const json& sampled = footprints[static_cast<std::size_t>(w)];
    if (sampled.is_object()) window.update(sampled);
    windowList.push_back(window);
  }
  out["windows"] = windowList;
  return out;
}

}  // namespace hostport::bench
