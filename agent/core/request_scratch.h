#pragma once
// What one request sets aside while it is checked: the ports its earlier rows chose and the ports
// found busy on the host, which its later rows must not pick (FreeView, port_picker.h, reads the
// bitmap). Nothing here outlives the request: a Scope clears it at every exit, granted or
// refused, so a refused request leaves no trace. Clearing walks the ports set aside, not the
// whole bitmap.

#include <cstdint>
#include <vector>

#include "agent/core/port_picker.h"

namespace hostport::agent::core {

class RequestScratch {
 public:
  /// Clears the scratch when it goes out of scope: one per request.
  class Scope {
   public:
    explicit Scope(RequestScratch& scratch) : scratch_(scratch) {}
    ~Scope() { scratch_.clear(); }
    Scope(const Scope&) = delete;
    Scope& operator=(const Scope&) = delete;

   private:
    RequestScratch& scratch_;
  };

  void exclude(uint16_t port) {
    if (excluded_.test(port)) return;
    excluded_.set(port);
    ports_.push_back(port);
  }
  bool excluded(uint16_t port) const { return excluded_.test(port); }
  /// One bit per port set aside.
  const PortBitmap& bitmap() const { return excluded_; }
  void clear() {
    for (const uint16_t port : ports_) excluded_.reset(port);
    ports_.clear();
  }

 private:
  PortBitmap excluded_;
  std::vector<uint16_t> ports_;  // the bits set in excluded_
};

}  // namespace hostport::agent::core
