#pragma once
// Keeps an event that can fire in a burst (a connection shed at the cap, thousands a second under
// a flood) to a line per interval, without losing count: the line that passes says how many
// occurrences it stands for.

#include <chrono>
#include <cstdint>
#include <optional>

namespace hostport::agent::log {

/// At most one line per `interval`, each counting the occurrences since the line before. Not
/// synchronised: one caller at a time (the server's accept handler).
class LineThrottle {
 public:
  using Clock = std::chrono::steady_clock;

  explicit LineThrottle(Clock::duration interval = std::chrono::seconds(1)) : interval_(interval) {}

  /// Counts one occurrence at `now`. When a line may be written, returns the occurrences it
  /// stands for (this one and those held back since the last line); nullopt otherwise.
  std::optional<uint64_t> admit(Clock::time_point now);

 private:
  Clock::duration interval_;
  std::optional<Clock::time_point> lastLine_;
  uint64_t heldBack_ = 0;
};

}  // namespace hostport::agent::log
