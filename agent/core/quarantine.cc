#include "agent/core/quarantine.h"

namespace hostport::agent::core {

Quarantine::Quarantine(PoolLayout layout, std::chrono::seconds delay, PortBitmap& marks)
    : layout_(std::move(layout)), delay_(delay), marks_(&marks), sentinel_(layout_.size()) {
  if (!enabled()) return;
  next_.assign(sentinel_ + 1u, kUnlinked);
  prev_.assign(sentinel_ + 1u, kUnlinked);
  until_.resize(sentinel_);
  next_[sentinel_] = prev_[sentinel_] = sentinel_;
}

void Quarantine::add(uint16_t port, TimePoint now) {
  if (!enabled() || contains(port)) return;
  const auto offset = layout_.offsetOf(port);
  if (!offset) return;
  const uint32_t tail = prev_[sentinel_];
  next_[tail] = *offset;
  prev_[*offset] = tail;
  next_[*offset] = sentinel_;
  prev_[sentinel_] = *offset;
  until_[*offset] = now + delay_;
  marks_->set(port);
  ++size_;
}

void Quarantine::remove(uint16_t port) {
  if (!contains(port)) return;
  if (const auto offset = layout_.offsetOf(port)) unlink(*offset);
}

void Quarantine::retire(TimePoint now) {
  // Ports are added in release order with one delay, so the ones that are over sit at the head.
  // An injected clock that steps back only makes a port wait longer.
  while (size_ > 0) {
    const uint32_t oldest = next_[sentinel_];
    if (until_[oldest] > now) return;
    unlink(oldest);
  }
}

void Quarantine::unlink(uint32_t offset) {
  next_[prev_[offset]] = next_[offset];
  prev_[next_[offset]] = prev_[offset];
  next_[offset] = prev_[offset] = kUnlinked;
  marks_->reset(layout_.portAt(offset));
  --size_;
}

// Walks the line from its head (the oldest release).
class Quarantine::Stream final : public CandidateStream {
 public:
  Stream(const Quarantine& quarantine, const FreeView& view)
      : quarantine_(quarantine),
        view_(view),
        cursor_(quarantine.enabled() ? quarantine.next_[quarantine.sentinel_]
                                     : quarantine.sentinel_) {}

  std::optional<uint16_t> next() override {
    while (cursor_ != quarantine_.sentinel_) {
      const uint16_t port = quarantine_.layout_.portAt(cursor_);
      cursor_ = quarantine_.next_[cursor_];
      if (view_.isFree(port)) return port;
    }
    return std::nullopt;
  }

 private:
  const Quarantine& quarantine_;
  const FreeView& view_;
  uint32_t cursor_;
};

std::unique_ptr<CandidateStream> Quarantine::candidates(const FreeView& view) const {
  return std::make_unique<Stream>(*this, view);
}

}  // namespace hostport::agent::core
