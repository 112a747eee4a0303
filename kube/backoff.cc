#include "kube/backoff.h"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <string_view>

namespace hostport::kube {

std::chrono::milliseconds Backoff::delay(int attempt,
                                         std::optional<std::chrono::seconds> retryAfter) {
  const double cap = std::min<double>(static_cast<double>(policy_.max.count()),
                                      static_cast<double>(policy_.initial.count()) *
                                          std::pow(policy_.factor, std::max(0, attempt - 1)));
  auto wait = std::chrono::milliseconds(static_cast<int64_t>(cap * random_()));
  // A Retry-After longer than the cap is cut to it: one pod's 429 must not hold the publisher's
  // only thread for an hour; the outbox tries that pod again later anyway.
  if (retryAfter) {
    const std::chrono::milliseconds asked = *retryAfter;
    wait = std::max(wait, std::min(asked, policy_.max));
  }
  return wait;
}

std::optional<std::chrono::seconds> parseRetryAfter(std::string_view value) {
  while (!value.empty() && value.front() == ' ') value.remove_prefix(1);
  while (!value.empty() && value.back() == ' ') value.remove_suffix(1);
  int64_t seconds = 0;
  const auto [end, error] = std::from_chars(value.data(), value.data() + value.size(), seconds);
  if (value.empty() || error != std::errc() || end != value.data() + value.size() || seconds < 0) {
    return std::nullopt;
  }
  return std::chrono::seconds(std::min<int64_t>(seconds, 3600));
}

}  // namespace hostport::kube
