#pragma once
// What the fuzz targets share: a check that stops the run loudly (libFuzzer keeps the input as a
// crash artifact on abort), and the input as text.

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string_view>

namespace hostport::fuzz {

/// An invariant broke: print what and where, then abort so libFuzzer records the input.
[[noreturn]] inline void fail(const char* what, const char* file, int line) {
  std::fprintf(stderr, "%s:%d: invariant broken: %s\n", file, line, what);
  std::abort();
}

inline std::string_view textOf(const uint8_t* data, size_t size) {
  return {reinterpret_cast<const char*>(data), size};
}

}  // namespace hostport::fuzz

/// Checks an invariant in every build type (assert() is gone under NDEBUG).
#define FUZZ_CHECK(condition) \
  ((condition) ? void() : ::hostport::fuzz::fail(#condition, __FILE__, __LINE__))
