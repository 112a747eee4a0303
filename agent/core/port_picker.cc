#include "agent/core/port_picker.h"

#include <algorithm>
#include <bit>

namespace hostport::agent::core {

const PortBitmap FreeView::kNothing;

bool FreeView::isRunFree(uint32_t first, uint32_t count) const {
  if (count == 0 || first + count - 1 > 65535) return false;
  return !scan(first, first + count - 1, /*free=*/false).has_value();
}

std::optional<uint32_t> FreeView::scan(uint32_t from, uint32_t to, bool free) const {
  if (from > to) return std::nullopt;
  std::size_t index = from >> 6;
  const std::size_t lastIndex = to >> 6;
  uint64_t bits = busyWord(index);
  if (free) bits = ~bits;
  bits &= ~uint64_t{0} << (from & 63);
  while (true) {
    if (bits != 0) {
      const uint32_t port = static_cast<uint32_t>(index << 6) + std::countr_zero(bits);
      return port <= to ? std::optional(port) : std::nullopt;
    }
    if (++index > lastIndex) return std::nullopt;
    bits = busyWord(index);
    if (free) bits = ~bits;
  }
}

std::optional<uint16_t> FreeView::findRun(uint32_t from, uint32_t maxStart, uint32_t count) const {
  while (from <= maxStart) {
    const auto start = scan(from, maxStart, /*free=*/true);
    if (!start) return std::nullopt;
    if (count == 1) return static_cast<uint16_t>(*start);
    const auto busy = scan(*start + 1, *start + count - 1, /*free=*/false);
    if (!busy) return static_cast<uint16_t>(*start);
    from = *busy + 1;  // no run starting at or before the busy port can hold `count` ports
  }
  return std::nullopt;
}

PoolLayout::PoolLayout(std::vector<PortRange> ranges) : ranges_(std::move(ranges)) {
  std::ranges::sort(ranges_, {}, &PortRange::first);
  starts_.reserve(ranges_.size());
  for (const auto& range : ranges_) {
    starts_.push_back(size_);
    size_ += range.size();
    widest_ = std::max(widest_, range.size());
  }
}

uint16_t PoolLayout::portAt(uint32_t offset) const {
  const auto it = std::ranges::upper_bound(starts_, offset);
  const auto index = static_cast<std::size_t>(it - starts_.begin()) - 1;
  return static_cast<uint16_t>(ranges_[index].first + (offset - starts_[index]));
}

const PortRange* PoolLayout::rangeOf(uint16_t port) const {
  const auto it = std::ranges::upper_bound(ranges_, port, {}, &PortRange::first);
  if (it == ranges_.begin()) return nullptr;
  const PortRange& range = *(it - 1);
  return range.contains(port) ? &range : nullptr;
}

std::optional<uint32_t> PoolLayout::offsetOf(uint16_t port) const {
  const PortRange* range = rangeOf(port);
  if (range == nullptr) return std::nullopt;
  return starts_[static_cast<std::size_t>(range - ranges_.data())] + (port - range->first);
}

namespace {

// Walks runs of free ports through a list of segments: each segment is the starts [from,
// maxStart] of runs inside one range. Lowest-free and random differ only in the segments.
class SegmentStream final : public CandidateStream {
 public:
  struct Segment {
    uint32_t from;
    uint32_t maxStart;
  };

  SegmentStream(const FreeView& view, uint16_t count, std::vector<Segment> segments)
      : view_(view), count_(count), segments_(std::move(segments)) {}

  std::optional<uint16_t> next() override {
    while (current_ < segments_.size()) {
      Segment& segment = segments_[current_];
      if (const auto start = view_.findRun(segment.from, segment.maxStart, count_)) {
        segment.from = *start + 1u;
        return start;
      }
      ++current_;
    }
    return std::nullopt;
  }

 private:
  const FreeView& view_;
  uint32_t count_;
  std::vector<SegmentStream::Segment> segments_;
  std::size_t current_ = 0;
};

// The last start of a run of `count` inside `range`, or nullopt when the range is too narrow.
std::optional<uint32_t> lastStart(const PortRange& range, uint16_t count) {
  if (range.size() < count) return std::nullopt;
  return static_cast<uint32_t>(range.last) - count + 1;
}

}  // namespace

std::unique_ptr<CandidateStream> LowestFreePicker::candidates(const FreeView& view,
                                                              uint16_t count) {
  std::vector<SegmentStream::Segment> segments;
  for (const auto& range : layout_.ranges()) {
    if (const auto maxStart = lastStart(range, count)) segments.push_back({range.first, *maxStart});
  }
  return std::make_unique<SegmentStream>(view, count, std::move(segments));
}

std::unique_ptr<CandidateStream> RandomPicker::candidates(const FreeView& view, uint16_t count) {
  std::vector<SegmentStream::Segment> segments;
  const auto& ranges = layout_.ranges();
  if (layout_.size() == 0) return std::make_unique<SegmentStream>(view, count, segments);
  const uint16_t pivot = layout_.portAt(static_cast<uint32_t>(random_() % layout_.size()));
  const auto home = static_cast<std::size_t>(layout_.rangeOf(pivot) - ranges.data());
  // From the pivot to the end of its range, the ranges above it, wrap to the ranges below it,
  // and last the part of its own range below the pivot.
  if (const auto maxStart = lastStart(ranges[home], count); maxStart && pivot <= *maxStart) {
    segments.push_back({pivot, *maxStart});
  }
  for (std::size_t step = 1; step < ranges.size(); ++step) {
    const PortRange& range = ranges[(home + step) % ranges.size()];
    if (const auto maxStart = lastStart(range, count)) segments.push_back({range.first, *maxStart});
  }
  if (const auto maxStart = lastStart(ranges[home], count);
      maxStart && pivot > ranges[home].first) {
    segments.push_back({ranges[home].first, std::min<uint32_t>(pivot - 1u, *maxStart)});
  }
  return std::make_unique<SegmentStream>(view, count, std::move(segments));
}

// Walks the recency list from its head (the least recently released port).
class RoundRobinPicker::Stream final : public CandidateStream {
 public:
  Stream(const RoundRobinPicker& picker, const FreeView& view, uint16_t count)
      : picker_(picker), view_(view), count_(count), cursor_(picker.next_[picker.sentinel_]) {}

  std::optional<uint16_t> next() override {
    const PoolLayout& layout = picker_.layout();
    while (cursor_ != picker_.sentinel_) {
      const uint16_t start = layout.portAt(cursor_);
      cursor_ = picker_.next_[cursor_];
      const PortRange* range = layout.rangeOf(start);
      if (static_cast<uint32_t>(start) + count_ - 1 <= range->last &&
          view_.isRunFree(start, count_)) {
        return start;
      }
    }
    return std::nullopt;
  }

 private:
  const RoundRobinPicker& picker_;
  const FreeView& view_;
  uint32_t count_;
  uint32_t cursor_;
};

RoundRobinPicker::RoundRobinPicker(PoolLayout layout)
    : PortPicker(std::move(layout)),
      sentinel_(layout_.size()),
      next_(layout_.size() + 1, kUnlinked),
      prev_(layout_.size() + 1, kUnlinked) {
  next_[sentinel_] = prev_[sentinel_] = sentinel_;
  for (uint32_t offset = 0; offset < sentinel_; ++offset) pushBack(offset);
}

std::unique_ptr<CandidateStream> RoundRobinPicker::candidates(const FreeView& view,
                                                              uint16_t count) {
  return std::make_unique<Stream>(*this, view, count);
}

void RoundRobinPicker::taken(uint16_t port) {
  if (const auto offset = layout_.offsetOf(port); offset && linked(*offset)) unlink(*offset);
}

void RoundRobinPicker::released(uint16_t port) {
  if (const auto offset = layout_.offsetOf(port); offset && !linked(*offset)) pushBack(*offset);
}

void RoundRobinPicker::unlink(uint32_t offset) {
  next_[prev_[offset]] = next_[offset];
  prev_[next_[offset]] = prev_[offset];
  next_[offset] = prev_[offset] = kUnlinked;
}

void RoundRobinPicker::pushBack(uint32_t offset) {
  const uint32_t tail = prev_[sentinel_];
  next_[tail] = offset;
  prev_[offset] = tail;
  next_[offset] = sentinel_;
  prev_[sentinel_] = offset;
}

}  // namespace hostport::agent::core
