#pragma once
// A PortProbe over an in-memory table of host sockets, for tests of the allocation engine.

#include <map>
#include <utility>

#include "agent/core/allocator.h"

namespace hostport::agent::core {

class FakePortProbe final : public PortProbe {
 public:
  /// Marks (protocol, port) as bound on the host by `holder`.
  void bind(Protocol protocol, uint16_t port, PortHolder holder = {}) {
    bound_[{protocol, port}] = std::move(holder);
  }
  void unbind(Protocol protocol, uint16_t port) { bound_.erase({protocol, port}); }
  bool isBound(Protocol protocol, uint16_t port) override {
    ++calls_;
    return bound_.contains({protocol, port});
  }

  PortHolder holderOf(Protocol protocol, uint16_t port) override {
    const auto found = bound_.find({protocol, port});
    return found == bound_.end() ? PortHolder{} : found->second;
  }

  int calls() const { return calls_; }

 private:
  std::map<std::pair<Protocol, uint16_t>, PortHolder> bound_;
  int calls_ = 0;
};

}  // namespace hostport::agent::core
