#pragma once

#include <cstdint>
#include <string_view>

namespace hostport::agent::store {

/// CRC-32C (Castagnoli), the checksum of ext4, iSCSI and LevelDB. `crc` continues a running value:
/// crc32c(ab) == crc32c(b, crc32c(a)).
/// Uses the SSE4.2 crc32 instruction when the CPU has it.
uint32_t crc32c(std::string_view data, uint32_t crc = 0);
/// The table-driven version, for CPUs without it; exposed so tests can compare the two.
uint32_t crc32cPortable(std::string_view data, uint32_t crc = 0);

}  // namespace hostport::agent::store
