#pragma once
// Picking strategies, the Kea shape: a picker only proposes candidate first ports, lazily and one
// at a time; the engine (allocator.cc) checks each against the host and decides. A picker keeps
// its own order (the round-robin recency list, the random source) but owns no occupancy: it reads
// it through a FreeView, and the engine tells it when a port of its pool is taken or freed.
//
// Occupancy is a 65536-bit map (8 KiB) scanned a 64-bit word at a time, so finding the lowest
// free run costs a few hundred word reads at most, whatever the number of leases.

#include <array>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <vector>

#include "lease/lease.h"

namespace hostport::agent::core {

/// Port numbers, 0 to 65535: the size of every table indexed by one.
inline constexpr std::size_t kPortSpace = 65536;

/// One bit per port number.
class PortBitmap {
 public:
  bool test(uint16_t port) const { return (words_[port >> 6] >> (port & 63)) & 1; }
  void set(uint16_t port) { words_[port >> 6] |= uint64_t{1} << (port & 63); }
  void reset(uint16_t port) { words_[port >> 6] &= ~(uint64_t{1} << (port & 63)); }
  uint64_t word(std::size_t index) const { return words_[index]; }

 private:
  std::array<uint64_t, kPortSpace / 64> words_{};
};

/// The occupancy one request sees: a port is free when the engine holds nothing on it, the
/// request has not set it aside (busy on the host, or taken by an earlier row of the request)
/// and, in a view given `quarantined`, it is not waiting out a reuse delay (quarantine.h).
class FreeView {
 public:
  FreeView(const PortBitmap& held, const PortBitmap& excluded)
      : FreeView(held, excluded, kNothing) {}
  FreeView(const PortBitmap& held, const PortBitmap& excluded, const PortBitmap& quarantined)
      : held_(held), excluded_(excluded), quarantined_(quarantined) {}

  bool isFree(uint16_t port) const {
    return !held_.test(port) && !excluded_.test(port) && !quarantined_.test(port);
  }
  bool isRunFree(uint32_t first, uint32_t count) const;
  /// The lowest s in [from, maxStart] with s..s+count-1 all free; the caller keeps the run inside
  /// a range (maxStart + count - 1 <= 65535).
  std::optional<uint16_t> findRun(uint32_t from, uint32_t maxStart, uint32_t count) const;

 private:
  // The first port in [from, to] that is free (or busy, when `free` is false).
  std::optional<uint32_t> scan(uint32_t from, uint32_t to, bool free) const;

  uint64_t busyWord(std::size_t index) const {
    return held_.word(index) | excluded_.word(index) | quarantined_.word(index);
  }

  static const PortBitmap kNothing;
  const PortBitmap& held_;
  const PortBitmap& excluded_;
  const PortBitmap& quarantined_;
};

/// A pool's ranges, sorted, numbered by offset: offset 0 is the first port of the lowest range.
class PoolLayout {
 public:
  /// `ranges` must be valid and disjoint (Allocator::create checks); they are sorted here.
  explicit PoolLayout(std::vector<PortRange> ranges);

  const std::vector<PortRange>& ranges() const { return ranges_; }
  uint32_t size() const { return size_; }
  uint32_t widestRange() const { return widest_; }
  uint16_t portAt(uint32_t offset) const;
  std::optional<uint32_t> offsetOf(uint16_t port) const;
  /// The range holding `port`, or nullptr.
  const PortRange* rangeOf(uint16_t port) const;

 private:
  std::vector<PortRange> ranges_;
  std::vector<uint32_t> starts_;  // offset of each range's first port
  uint32_t size_ = 0;
  uint32_t widest_ = 0;
};

/// One request row's lazy stream of candidates. Each candidate is proposed at most once.
class CandidateStream {
 public:
  virtual ~CandidateStream() = default;
  /// The next first port of `count` contiguous ports that are free in the view and inside one
  /// range; nullopt when there are no more.
  virtual std::optional<uint16_t> next() = 0;
};

/// A picking strategy for one pool.
class PortPicker {
 public:
  virtual ~PortPicker() = default;
  /// The stream reads `view`, which must outlive it; the engine changes nothing the stream
  /// depends on (`taken`, `released`) while a stream is open.
  virtual std::unique_ptr<CandidateStream> candidates(const FreeView& view, uint16_t count) = 0;
  /// `port`, in this pool, became held by some lease.
  virtual void taken(uint16_t /*port*/) {}
  /// `port`, in this pool, is held by no lease any more.
  virtual void released(uint16_t /*port*/) {}
  const PoolLayout& layout() const { return layout_; }

 protected:
  explicit PortPicker(PoolLayout layout) : layout_(std::move(layout)) {}
  PoolLayout layout_;
};

/// Lowest-free: ranges in ascending order, the lowest free run first.
class LowestFreePicker final : public PortPicker {
 public:
  explicit LowestFreePicker(PoolLayout layout) : PortPicker(std::move(layout)) {}
  std::unique_ptr<CandidateStream> candidates(const FreeView& view, uint16_t count) override;
};

/// Random: a random offset in the pool, then the next free runs from there, wrapping around.
class RandomPicker final : public PortPicker {
 public:
  RandomPicker(PoolLayout layout, std::function<uint64_t()> random)
      : PortPicker(std::move(layout)), random_(std::move(random)) {}
  std::unique_ptr<CandidateStream> candidates(const FreeView& view, uint16_t count) override;

 private:
  std::function<uint64_t()> random_;
};

/// Round-robin: the least recently released port first, so a port just freed is not handed out
/// again at once (a client of the old pod may still be talking to it). Ports never used count as
/// the least recent, lowest first. An intrusive doubly-linked list over pool offsets keeps the
/// free ports in release order: O(1) to take, free or find the head.
class RoundRobinPicker final : public PortPicker {
 public:
  explicit RoundRobinPicker(PoolLayout layout);
  std::unique_ptr<CandidateStream> candidates(const FreeView& view, uint16_t count) override;
  void taken(uint16_t port) override;
  void released(uint16_t port) override;

 private:
  class Stream;
  bool linked(uint32_t offset) const { return next_[offset] != kUnlinked; }
  void unlink(uint32_t offset);
  void pushBack(uint32_t offset);

  static constexpr uint32_t kUnlinked = UINT32_MAX;
  // Index `sentinel_` (== pool size) is the list head and tail.
  uint32_t sentinel_;
  std::vector<uint32_t> next_;
  std::vector<uint32_t> prev_;
};

}  // namespace hostport::agent::core
