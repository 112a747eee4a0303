#pragma once
// Little-endian integer helpers shared by the codec, the journal and the snapshot. The on-disk
// byte order is fixed, whatever the host's.

#include <bit>
#include <cstdint>
#include <cstring>
#include <string>
#include <string_view>
#include <type_traits>

namespace hostport::agent::store::bytes {

template <typename T>
void put(std::string& out, T value) {
  static_assert(std::is_unsigned_v<T>);
  if constexpr (std::endian::native == std::endian::big) value = std::byteswap(value);
  char raw[sizeof(T)];
  std::memcpy(raw, &value, sizeof(T));
  out.append(raw, sizeof(T));
}

/// The caller has checked that `at + sizeof(T) <= data.size()`.
template <typename T>
T get(std::string_view data, size_t at) {
  static_assert(std::is_unsigned_v<T>);
  T value;
  std::memcpy(&value, data.data() + at, sizeof(T));
  if constexpr (std::endian::native == std::endian::big) value = std::byteswap(value);
  return value;
}

}  // namespace hostport::agent::store::bytes
