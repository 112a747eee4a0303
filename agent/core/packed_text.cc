#include "agent/core/packed_text.h"

#include <array>
#include <cassert>

namespace hostport::agent::core::packed {
namespace {

enum Form : uint8_t { kRaw = 0, kHex = 1, kUuid = 2 };

constexpr std::size_t kUuidChars = 36;
constexpr std::size_t kUuidBytes = 16;
constexpr char kDigits[] = "0123456789abcdef";

// 0-15 for a lowercase hex digit, -1 for anything else (uppercase included, see the header).
constexpr std::array<int8_t, 256> kNibble = [] {
  std::array<int8_t, 256> table{};
  table.fill(-1);
  for (int i = 0; i < 16; ++i)
    table[static_cast<unsigned char>(kDigits[i])] = static_cast<int8_t>(i);
  return table;
}();

int nibble(char c) { return kNibble[static_cast<unsigned char>(c)]; }

bool isDash(std::size_t at) { return at == 8 || at == 13 || at == 18 || at == 23; }

// Writes the bytes that the lowercase hex digits `hex` spell to `out`, which has room for
// hex.size() / 2; false, with `out` partly written, at the first character that is not one.
bool hexToBytes(std::string_view hex, char* out) {
  for (std::size_t i = 0; i + 1 < hex.size(); i += 2) {
    const int high = nibble(hex[i]);
    const int low = nibble(hex[i + 1]);
    if ((high | low) < 0) return false;
    *out++ = static_cast<char>((high << 4) | low);
  }
  return true;
}

// Appends the hex form of `text` when it has one.
bool putHex(std::string& out, std::string_view text) {
  if (text.empty() || text.size() % 2 != 0) return false;
  const std::size_t mark = out.size();
  putVarint(out, (uint64_t{text.size() / 2 - 1} << 2) | kHex);  // never 0 bytes, see the header
  const std::size_t start = out.size();
  out.resize(start + text.size() / 2);
  if (hexToBytes(text, out.data() + start)) return true;
  out.resize(mark);
  return false;
}

void appendHex(std::string& out, const uint8_t* bytes, std::size_t count) {
  const std::size_t start = out.size();
  out.resize(start + 2 * count);
  char* digits = out.data() + start;
  for (std::size_t i = 0; i < count; ++i) {
    *digits++ = kDigits[bytes[i] >> 4];
    *digits++ = kDigits[bytes[i] & 0xf];
  }
}

}  // namespace

bool endsInUuid(std::string_view text) {
  if (text.size() < kUuidChars) return false;
  const std::string_view uuid = text.substr(text.size() - kUuidChars);
  for (std::size_t i = 0; i < kUuidChars; ++i) {
    if (isDash(i) ? uuid[i] != '-' : nibble(uuid[i]) < 0) return false;
  }
  return true;
}

void putVarint(std::string& out, uint64_t value) {
  while (value >= 0x80) {
    out.push_back(static_cast<char>((value & 0x7f) | 0x80));
    value >>= 7;
  }
  out.push_back(static_cast<char>(value));
}

void putU16(std::string& out, uint16_t value) {
  out.push_back(static_cast<char>(value & 0xff));
  out.push_back(static_cast<char>(value >> 8));
}

void putText(std::string& out, std::string_view text) {
  if (putHex(out, text)) return;
  if (endsInUuid(text)) {
    const std::string_view head = text.substr(0, text.size() - kUuidChars);
    const std::string_view uuid = text.substr(head.size());
    putVarint(out, (uint64_t{head.size()} << 2) | kUuid);
    out.append(head);
    const std::size_t start = out.size();
    out.resize(start + kUuidBytes);
    // 8-4-4-4-12 characters are 4-2-2-2-6 bytes; endsInUuid() checked every digit.
    char* bytes = out.data() + start;
    hexToBytes(uuid.substr(0, 8), bytes);
    hexToBytes(uuid.substr(9, 4), bytes + 4);
    hexToBytes(uuid.substr(14, 4), bytes + 6);
    hexToBytes(uuid.substr(19, 4), bytes + 8);
    hexToBytes(uuid.substr(24, 12), bytes + 10);
  } else {
    putVarint(out, (uint64_t{text.size()} << 2) | kRaw);
    out.append(text);
  }
}

void putBytes(std::string& out, std::string_view bytes) {
  putVarint(out, bytes.size());
  out.append(bytes);
}

uint64_t ByteReader::varint() {
  uint64_t value = 0;
  for (int shift = 0;; shift += 7) {
    const uint8_t byte = *at_++;
    value |= uint64_t{byte & 0x7fu} << shift;
    if ((byte & 0x80) == 0) return value;
  }
}

uint16_t ByteReader::u16() {
  const uint16_t value = static_cast<uint16_t>(at_[0] | (at_[1] << 8));
  at_ += 2;
  return value;
}

namespace {

// The n of a text's header (see packed_text.h).
std::size_t lengthOf(uint64_t header) {
  return static_cast<std::size_t>(header >> 2) + ((header & 3) == kHex ? 1 : 0);
}

}  // namespace

void ByteReader::appendText(std::string& out) {
  const uint64_t header = varint();
  const std::size_t n = lengthOf(header);
  switch (header & 3) {
    case kRaw:
      out.append(reinterpret_cast<const char*>(take(n)), n);
      return;
    case kHex:
      out.reserve(out.size() + 2 * n);
      appendHex(out, take(n), n);
      return;
    case kUuid: {
      out.reserve(out.size() + n + kUuidChars);
      out.append(reinterpret_cast<const char*>(take(n)), n);
      const uint8_t* uuid = take(kUuidBytes);
      // 8-4-4-4-12 characters are 4-2-2-2-6 bytes.
      appendHex(out, uuid, 4);
      for (const std::size_t at : {4, 6, 8}) {
        out.push_back('-');
        appendHex(out, uuid + at, 2);
      }
      out.push_back('-');
      appendHex(out, uuid + 10, 6);
      return;
    }
  }
  assert(false && "packed text with an unknown form");
}

void ByteReader::skipText() {
  const uint64_t header = varint();
  const std::size_t n = lengthOf(header);
  take((header & 3) == kUuid ? n + kUuidBytes : n);
}

}  // namespace hostport::agent::core::packed
