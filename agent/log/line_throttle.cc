#include "agent/log/line_throttle.h"

#include <utility>

namespace hostport::agent::log {

std::optional<uint64_t> LineThrottle::admit(Clock::time_point now) {
  if (lastLine_ && now - *lastLine_ < interval_) {
    ++heldBack_;
    return std::nullopt;
  }
  lastLine_ = now;
  return std::exchange(heldBack_, 0) + 1;
}

}  // namespace hostport::agent::log
