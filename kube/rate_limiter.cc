#include "kube/rate_limiter.h"

#include <algorithm>

namespace hostport::kube {

RateLimiter::RateLimiter(double qps, int burst, Clock::time_point now)
    : qps_(qps), burst_(std::max(1, burst)), tokens_(burst_), last_(now) {}

RateLimiter::Clock::time_point RateLimiter::reserve(Clock::time_point now) {
  if (now > last_) {
    const double elapsed = std::chrono::duration<double>(now - last_).count();
    tokens_ = std::min<double>(burst_, tokens_ + elapsed * qps_);
    last_ = now;
  }
  tokens_ -= 1;
  if (tokens_ >= 0) return now;
  const auto wait = std::chrono::duration<double>(-tokens_ / qps_);
  return now + std::chrono::duration_cast<Clock::duration>(wait);
}

}  // namespace hostport::kube
