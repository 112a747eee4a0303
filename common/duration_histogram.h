#pragma once
// A Prometheus histogram of durations: observed from any thread while /metrics writes it, so its
// counts are relaxed atomics. The agent's allocation latency and the admission server's review
// latency are two of them.

#include <array>
#include <atomic>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <utility>

#include "common/prometheus_text.h"

namespace hostport::prometheus {

template <std::size_t N>
class DurationHistogram {
 public:
  /// `bounds`: the buckets' upper bounds in seconds, ascending; +Inf follows them.
  explicit constexpr DurationHistogram(std::array<double, N> bounds) : bounds_(bounds) {}

  void observe(std::chrono::nanoseconds took) {
    const double seconds = std::chrono::duration<double>(took).count();
    for (std::size_t i = 0; i < N; ++i) {
      if (seconds <= bounds_[i]) counts_[i].fetch_add(1, std::memory_order_relaxed);
    }
    count_.fetch_add(1, std::memory_order_relaxed);
    nanos_.fetch_add(static_cast<uint64_t>(took.count()), std::memory_order_relaxed);
  }

  /// `name`_bucket for each bound and +Inf (cumulative, as Prometheus reads them), then
  /// `name`_sum in seconds and `name`_count, each with `label` when given. The family's HELP and
  /// TYPE lines are the caller's.
  void write(TextWriter& out, std::string_view name,
             std::optional<std::pair<std::string_view, std::string_view>> label = {}) const {
    const std::string bucket = std::string(name) + "_bucket";
    const auto sample = [&](const std::string& sampleName, auto value, std::string_view le) {
      if (label && !le.empty()) {
        out.sample(sampleName, value, {*label, {"le", le}});
      } else if (label) {
        out.sample(sampleName, value, {*label});
      } else if (!le.empty()) {
        out.sample(sampleName, value, {{"le", le}});
      } else {
        out.sample(sampleName, value);
      }
    };
    for (std::size_t i = 0; i < N; ++i) {
      sample(bucket, counts_[i].load(std::memory_order_relaxed), formatNumber(bounds_[i]));
    }
    const uint64_t count = count_.load(std::memory_order_relaxed);
    sample(bucket, count, "+Inf");
    sample(std::string(name) + "_sum",
           static_cast<double>(nanos_.load(std::memory_order_relaxed)) / 1e9, "");
    sample(std::string(name) + "_count", count, "");
  }

 private:
  std::array<double, N> bounds_;
  std::array<std::atomic<uint64_t>, N> counts_{};  // cumulative: each observation in every bucket
  std::atomic<uint64_t> count_{0};
  std::atomic<uint64_t> nanos_{0};
};

}  // namespace hostport::prometheus
