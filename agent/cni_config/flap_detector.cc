#include "agent/cni_config/flap_detector.h"

namespace hostport::agent::cni_config {

FlapDetector::Change FlapDetector::removalSeen(Clock::time_point now) {
  removals_.push_back(now);
  while (!removals_.empty() && now - removals_.front() > policy_.window) removals_.pop_front();
  if (flappingSince_ || removals_.size() < policy_.maxRemovals) return Change::kNone;
  flappingSince_ = now;
  return Change::kStarted;
}

FlapDetector::Change FlapDetector::tick(Clock::time_point now) {
  if (!flappingSince_ || now - *flappingSince_ < policy_.quietPeriod) return Change::kNone;
  // A fresh count: the next fight needs as many removals again, so a primary that reverts us
  // costs maxRemovals writes per quiet period, not one per change.
  flappingSince_.reset();
  removals_.clear();
  return Change::kEnded;
}

std::optional<Clock::time_point> FlapDetector::quietEnds() const {
  if (!flappingSince_) return std::nullopt;
  return *flappingSince_ + policy_.quietPeriod;
}

}  // namespace hostport::agent::cni_config
