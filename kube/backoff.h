#pragma once
// How long to wait before retrying an API request that failed in a way worth retrying (429, 5xx,
// a connection error, a timeout): exponential with full jitter (a random wait up to the cap of
// the attempt, so many agents that failed together do not retry together), and never less than
// the server's Retry-After. Pure: the random source is the caller's.

#include <chrono>
#include <cstdint>
#include <functional>
#include <optional>
#include <string_view>

namespace hostport::kube {

struct BackoffPolicy {
  std::chrono::milliseconds initial{200};
  std::chrono::milliseconds max{30'000};
  double factor = 2.0;
};

class Backoff {
 public:
  /// `random` returns a value in [0, 1).
  Backoff(BackoffPolicy policy, std::function<double()> random)
      : policy_(policy), random_(std::move(random)) {}

  /// The wait before retry number `attempt` (1 for the first retry), at least `retryAfter` up to
  /// the policy's max.
  std::chrono::milliseconds delay(int attempt, std::optional<std::chrono::seconds> retryAfter = {});

 private:
  BackoffPolicy policy_;
  std::function<double()> random_;
};

/// Retry-After's delta-seconds form (the API server sends nothing else); nullopt otherwise.
std::optional<std::chrono::seconds> parseRetryAfter(std::string_view value);

}  // namespace hostport::kube
