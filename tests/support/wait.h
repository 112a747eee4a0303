#pragma once
// Polling for a state another thread or process brings about, for tests: the one helper instead
// of a loop in each test.

#include <chrono>
#include <functional>
#include <thread>

namespace hostport::test {

/// Polls `condition` until it holds or `timeout` passes; its last answer.
inline bool waitUntil(const std::function<bool()>& condition,
                      std::chrono::milliseconds timeout = std::chrono::seconds(10)) {
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  while (!condition()) {
    if (std::chrono::steady_clock::now() >= deadline) return condition();
    std::this_thread::sleep_for(std::chrono::milliseconds(2));
  }
  return true;
}

}  // namespace hostport::test
