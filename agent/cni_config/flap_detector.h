#pragma once
// Tells a primary that rewrites its file now and then (Calico and flannel at every start) from one
// that reverts every foreign edit (Cilium with cni.exclusive=true): writing back at the second
// would be a loop of writes, each one a config reload in the runtime. Pure: the caller passes the
// time.

#include <chrono>
#include <cstddef>
#include <deque>
#include <optional>

namespace hostport::agent::cni_config {

using Clock = std::chrono::steady_clock;

struct FlapPolicy {
  std::size_t maxRemovals = 5;                     // this many removals of our entry ...
  std::chrono::milliseconds window{60'000};        // ... within this long is a fight
  std::chrono::milliseconds quietPeriod{120'000};  // no writes for this long, then one more try
};

class FlapDetector {
 public:
  enum class Change { kNone, kStarted, kEnded };

  explicit FlapDetector(FlapPolicy policy) : policy_(policy) {}

  /// A rewrite took our entry out at `now`. kStarted when this makes a fight.
  Change removalSeen(Clock::time_point now);
  /// kEnded once the quiet period after the start of a fight has passed at `now`: write again.
  Change tick(Clock::time_point now);

  bool flapping() const { return flappingSince_.has_value(); }
  /// When the quiet period of the current fight ends; nullopt when there is none.
  std::optional<Clock::time_point> quietEnds() const;
  std::size_t recentRemovals() const { return removals_.size(); }
  const FlapPolicy& policy() const { return policy_; }

 private:
  FlapPolicy policy_;
  std::deque<Clock::time_point> removals_;
  std::optional<Clock::time_point> flappingSince_;
};

}  // namespace hostport::agent::cni_config
