#pragma once
// Runs a function when the scope ends, however it ends (return, an early error return, an
// exception): for the one cleanup whose order against other locals matters.

#include <utility>

namespace hostport {

template <typename Function>
class ScopeExit {
 public:
  explicit ScopeExit(Function function) : function_(std::move(function)) {}
  ~ScopeExit() { function_(); }
  ScopeExit(const ScopeExit&) = delete;
  ScopeExit& operator=(const ScopeExit&) = delete;

 private:
  Function function_;
};

}  // namespace hostport
