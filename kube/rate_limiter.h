#pragma once
// Client-side rate limiting of API requests, as client-go's --kube-api-qps and --kube-api-burst:
// a token bucket that holds up to `burst` tokens and gains `qps` a second. Pure: the caller
// passes the time, so tests run it without sleeping.

#include <chrono>

namespace hostport::kube {

class RateLimiter {
 public:
  using Clock = std::chrono::steady_clock;

  RateLimiter(double qps, int burst, Clock::time_point now);

  /// Takes one token and returns when the request may go: `now` when one was there, later
  /// otherwise (the caller waits until then). Requests are granted in the order they ask.
  Clock::time_point reserve(Clock::time_point now);

  double qps() const { return qps_; }
  int burst() const { return burst_; }

 private:
  double qps_;
  int burst_;
  double tokens_;  // may go negative: reservations already promised
  Clock::time_point last_;
};

}  // namespace hostport::kube
