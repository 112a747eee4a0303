#pragma once
// The byte-level vocabulary of packed leases (packed_lease.h): varints, fixed u16s and text.
// Design note:
// - These bytes live only in the agent's memory and are read back only by the same build, so
//   there is no version and no bounds checking on the way back in: a reader trusts what a writer
//   of this file produced. The durable format is agent/store's codec, untouched by this.
// - Most lease text is machine-made: 64-hex container IDs, pod UIDs, "cni-<uuid>" netns names.
//   putText() picks the smallest of three forms, always the same one for the same text, so
//   packed bytes compare equal exactly when the texts do (the allocator's key index relies on
//   it):
//     raw   any text, as is;
//     hex   non-empty, even-length, lowercase hex: two characters a byte (uppercase would not
//           round-trip, so it stays raw);
//     uuid  text ending in a canonical lowercase 8-4-4-4-12 UUID: the head as is, the UUID in
//           16 bytes.
//   Header: varint (n << 2 | form), n being the raw length, the hex byte count less one (so a
//   64-digit container ID still has a one-byte header), or the head length.

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

namespace hostport::agent::core::packed {

/// Appends `value`, 7 bits a byte, low bits first.
void putVarint(std::string& out, uint64_t value);
/// Appends `value` little-endian in two bytes.
void putU16(std::string& out, uint16_t value);
/// Appends `text` in its smallest form (see the design note).
void putText(std::string& out, std::string_view text);
/// True when `text` ends in a canonical lowercase UUID (the third form).
bool endsInUuid(std::string_view text);
/// Appends `bytes` as they are, after their varint length: for text compared more often than
/// decoded.
void putBytes(std::string& out, std::string_view bytes);

/// Reads back, in order, what the put functions wrote.
class ByteReader {
 public:
  explicit ByteReader(const uint8_t* at) : at_(at) {}

  uint64_t varint();
  uint16_t u16();
  uint8_t u8() { return *at_++; }
  /// The next `count` bytes, skipped over.
  const uint8_t* take(std::size_t count) {
    const uint8_t* start = at_;
    at_ += count;
    return start;
  }
  /// What putBytes() wrote.
  std::string_view bytes() {
    const auto length = static_cast<std::size_t>(varint());
    return {reinterpret_cast<const char*>(take(length)), length};
  }
  std::string text() {
    std::string out;
    appendText(out);
    return out;
  }
  /// Decodes the next text onto the end of `out` (to reuse a buffer).
  void appendText(std::string& out);
  void skipText();
  const uint8_t* position() const { return at_; }

 private:
  const uint8_t* at_;
};

}  // namespace hostport::agent::core::packed
