#pragma once
// The soak's counters and its violations, shared by the churn workers and the conductor, and
// written out as the summary lines and the JSON report. Counter names are dotted paths
// ("add.failed_expected.agent_down"), which the JSON nests.

#include <cstdint>
#include <iostream>
#include <map>
#include <mutex>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

namespace hostport::soak {

class Stats {
 public:
  void add(const std::string& name, int64_t by = 1) {
    std::lock_guard lock(mutex_);
    counters_[name] += by;
  }
  void max(const std::string& name, int64_t value) {
    std::lock_guard lock(mutex_);
    auto [at, fresh] = counters_.try_emplace(name, value);
    if (!fresh && at->second < value) at->second = value;
  }
  int64_t get(const std::string& name) const {
    std::lock_guard lock(mutex_);
    const auto at = counters_.find(name);
    return at == counters_.end() ? 0 : at->second;
  }
  /// The sum of every counter under `prefix.`.
  int64_t sum(const std::string& prefix) const {
    std::lock_guard lock(mutex_);
    int64_t total = 0;
    for (const auto& [name, value] : counters_) {
      if (name.starts_with(prefix + ".")) total += value;
    }
    return total;
  }
  /// A broken invariant: counted, kept (the first 200) for the report.
  void violation(const std::string& kind, const std::string& detail) {
    std::lock_guard lock(mutex_);
    ++counters_["violations." + kind];
    if (violations_.size() < 200) {
      violations_.push_back(kind + ": " + detail);
      std::cerr << "soak: VIOLATION " << kind << ": " << detail << "\n";
    }
  }
  /// An unexpected operation failure (an invariant too: nothing else may fail).
  std::vector<std::string> violations() const {
    std::lock_guard lock(mutex_);
    return violations_;
  }
  std::map<std::string, int64_t> counters() const {
    std::lock_guard lock(mutex_);
    return counters_;
  }
  /// Every counter, nested by its dots: {"add": {"ok": 3, "failed_expected": {...}}}.
  nlohmann::json json() const {
    std::lock_guard lock(mutex_);
    nlohmann::json out = nlohmann::json::object();
    for (const auto& [name, value] : counters_) {
      nlohmann::json* at = &out;
      std::size_t start = 0;
      for (std::size_t dot = name.find('.'); dot != std::string::npos;
           dot = name.find('.', start)) {
        at = &(*at)[name.substr(start, dot - start)];
        if (!at->is_object()) *at = nlohmann::json::object();
        start = dot + 1;
      }
      (*at)[name.substr(start)] = value;
    }
    return out;
  }

 private:
  mutable std::mutex mutex_;
  std::map<std::string, int64_t> counters_;
  std::vector<std::string> violations_;
};

}  // namespace hostport::soak
