#pragma once
// Quarantine of released ports: a dynamic port that a lease gave back waits out its pool's reuse
// delay before the strategy may pick it again, so a new pod does not inherit the traffic (and the
// stale UDP conntrack entries, kubernetes#58336) of the old one. It is a preference, never a
// refusal: the engine hands out quarantined ports, oldest release first, when nothing else is
// free, so quarantine never exhausts a pool.
//
// Memory only: a restart forgets it. Ports wait in release order on an intrusive doubly-linked
// list over pool offsets, so adding, retiring the oldest and taking one out of the middle (it
// was granted anyway) are O(1). Every quarantined port also has its bit in an engine-wide bitmap,
// which the pickers' scans read a word at a time through FreeView.

#include <chrono>
#include <cstdint>
#include <memory>
#include <vector>

#include "agent/core/port_picker.h"

namespace hostport::agent::core {

/// The released dynamic ports of one pool that are still within their reuse delay.
class Quarantine {
 public:
  using TimePoint = std::chrono::steady_clock::time_point;

  /// `marks` is the engine's bitmap of quarantined ports (shared by every pool, which own
  /// disjoint ports); it must outlive this. A zero `delay` quarantines nothing.
  Quarantine(PoolLayout layout, std::chrono::seconds delay, PortBitmap& marks);

  bool enabled() const { return delay_.count() > 0; }
  uint32_t size() const { return size_; }
  bool contains(uint16_t port) const { return marks_->test(port); }

  /// Puts `port`, of this pool and free now, at the back of the line until `now` + the delay.
  void add(uint16_t port, TimePoint now);
  /// Takes `port` out: it is being granted while quarantined. No-op when it is not in.
  void remove(uint16_t port);
  /// Lets go of every port whose delay is over at `now`; they are eligible again.
  void retire(TimePoint now);

  /// The quarantined ports free in `view`, oldest release first: the last resort of a one-port
  /// row. The stream must not outlive a change to this quarantine.
  std::unique_ptr<CandidateStream> candidates(const FreeView& view) const;

 private:
  class Stream;
  void unlink(uint32_t offset);

  static constexpr uint32_t kUnlinked = UINT32_MAX;
  PoolLayout layout_;
  std::chrono::seconds delay_;
  PortBitmap* marks_;
  uint32_t size_ = 0;
  // Index `sentinel_` (== pool size) is the list head and tail; empty vectors when disabled.
  uint32_t sentinel_;
  std::vector<uint32_t> next_;
  std::vector<uint32_t> prev_;
  std::vector<TimePoint> until_;  // per offset: when the delay of a linked port is over
};

}  // namespace hostport::agent::core
