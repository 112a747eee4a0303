#pragma once
// Whether this test binary runs under AddressSanitizer: the sanitizer tree of scripts/test.sh's
// stage, built at -O0, where a test of the largest inputs (the 10 MiB GC of 65,536 of the longest
// keys) took 454 s and more. Such a test checks its bound at full size in the main tree and runs
// the same code on a smaller input under the sanitizers, whose business is memory, not bounds.

#include <cstddef>

namespace hostport::test {

#if defined(__SANITIZE_ADDRESS__)
inline constexpr bool kSanitized = true;
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
inline constexpr bool kSanitized = true;
#else
inline constexpr bool kSanitized = false;
#endif
#else
inline constexpr bool kSanitized = false;
#endif

/// `full`, or at most 4,096 under the sanitizers.
constexpr std::size_t sizedForTheTree(std::size_t full) {
  return kSanitized && full > 4096 ? 4096 : full;
}

}  // namespace hostport::test
