#include "agent/core/packed_text.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <random>
#include <string>
#include <vector>

namespace hostport::agent::core::packed {
namespace {

const uint8_t* bytesOf(const std::string& packed) {
  return reinterpret_cast<const uint8_t*>(packed.data());
}

std::string pack(std::string_view text) {
  std::string out;
  putText(out, text);
  return out;
}

// Packs `text`, reads it back, and checks the reader stopped exactly at the end.
std::string roundTrip(std::string_view text) {
  const std::string packed = pack(text);
  ByteReader in(bytesOf(packed));
  std::string back = in.text();
  EXPECT_EQ(in.position(), bytesOf(packed) + packed.size()) << "text " << text;
  ByteReader skipping(bytesOf(packed));
  skipping.skipText();
  EXPECT_EQ(skipping.position(), bytesOf(packed) + packed.size()) << "text " << text;
  return back;
}

constexpr std::string_view kUuid = "3f2a9c1e-0b7d-4e21-8f00-5a6b7c8d9e0f";
const std::string kContainerId = "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef";

TEST(PackedTextTest, RoundTripsHostileText) {
  const std::vector<std::string> texts = {
      "",
      "a",
      "eth0",
      kContainerId,
      kContainerId + "0",                  // odd-length hex
      "0123456789ABCDEF0123456789ABCDEF",  // uppercase hex
      "0123456789abcdeF",                  // one uppercase digit
      "ab cd",                             // hex with a space
      "-",
      std::string(kUuid),
      "cni-" + std::string(kUuid),
      "/var/run/netns/cni-" + std::string(kUuid),
      "3F2A9C1E-0B7D-4E21-8F00-5A6B7C8D9E0F",    // uppercase UUID
      "3f2a9c1e0b7d-4e21-8f00-5a6b7c8d9e0f-",    // dashes in the wrong places
      "3f2a9c1e-0b7d-4e21-8f00-5a6b7c8d9e0",     // one digit short
      "x3f2a9c1e-0b7d-4e21-8f00-5a6b7c8d9e0fx",  // UUID not at the end
      std::string(kUuid) + std::string(kUuid),   // two UUIDs
      std::string("\0\0", 2),
      std::string("a\0b", 3),
      std::string("\xff\x80\x7f", 3),
      std::string(4096, 'z'),                        // the store's bound
      std::string(70000, 'q'),                       // a three-byte varint length
      std::string(70000, 'e'),                       // and as hex
      std::string(70000, 'a') + std::string(kUuid),  // a long head before a UUID
  };
  for (const auto& text : texts) EXPECT_EQ(roundTrip(text), text) << "text " << text;
}

TEST(PackedTextTest, RoundTripsRandomText) {
  std::mt19937 rng(7);
  const std::string alphabet = "0123456789abcdefABCDEF-/xz";
  for (int i = 0; i < 2000; ++i) {
    std::string text(rng() % 80, ' ');
    for (auto& c : text) c = alphabet[rng() % alphabet.size()];
    ASSERT_EQ(roundTrip(text), text);
  }
}

TEST(PackedTextTest, PacksMachineMadeTextSmall) {
  EXPECT_EQ(pack(kContainerId).size(), 1u + 32u);  // two digits a byte, a one-byte header
  EXPECT_EQ(pack("ab").size(), 1u + 1u);
  EXPECT_EQ(pack(kUuid).size(), 1u + 16u);
  EXPECT_EQ(pack("cni-" + std::string(kUuid)).size(), 1u + 4u + 16u);
  EXPECT_EQ(pack("eth0").size(), 1u + 4u);
  EXPECT_EQ(pack("").size(), 1u);
  // What would not come back the same stays as it is.
  EXPECT_EQ(pack("ABCD").size(), 1u + 4u);
  EXPECT_EQ(pack("abc").size(), 1u + 3u);
}

TEST(PackedTextTest, GivesEqualBytesExactlyForEqualText) {
  // Texts that one form or another could confuse: equal bytes would merge two keys.
  const std::vector<std::string> texts = {"",
                                          "00",
                                          std::string(1, '\0'),
                                          "0",
                                          "ab",
                                          "AB",
                                          "ab-",
                                          "abab",
                                          "\xab",
                                          "\xab\xab",
                                          "0000",
                                          std::string(2, '\0'),
                                          "a",
                                          "-",
                                          std::string(kUuid),
                                          std::string(kUuid).substr(1),
                                          "x" + std::string(kUuid)};
  for (std::size_t i = 0; i < texts.size(); ++i) {
    EXPECT_EQ(pack(texts[i]), pack(std::string(texts[i])));
    for (std::size_t j = i + 1; j < texts.size(); ++j) {
      EXPECT_NE(pack(texts[i]), pack(texts[j]))
          << "\"" << texts[i] << "\" vs \"" << texts[j] << "\"";
    }
  }
}

TEST(PackedTextTest, ReadsBackASequenceOfFields) {
  std::string out;
  putVarint(out, 0);
  putText(out, kContainerId);
  putU16(out, 65535);
  putBytes(out, std::string("raw\0bytes", 9));
  putVarint(out, 127);
  putVarint(out, 128);
  putVarint(out, UINT32_MAX);
  putVarint(out, UINT64_MAX);
  putText(out, "tail");
  out.push_back('\x5a');

  ByteReader in(bytesOf(out));
  EXPECT_EQ(in.varint(), 0u);
  EXPECT_EQ(in.text(), kContainerId);
  EXPECT_EQ(in.u16(), 65535);
  EXPECT_EQ(in.bytes(), std::string_view("raw\0bytes", 9));
  EXPECT_EQ(in.varint(), 127u);
  EXPECT_EQ(in.varint(), 128u);
  EXPECT_EQ(in.varint(), UINT32_MAX);
  EXPECT_EQ(in.varint(), UINT64_MAX);
  std::string appended = "head:";
  in.appendText(appended);
  EXPECT_EQ(appended, "head:tail");
  EXPECT_EQ(in.u8(), 0x5a);
  EXPECT_EQ(in.position(), bytesOf(out) + out.size());
}

TEST(PackedTextTest, SpotsATrailingUuid) {
  EXPECT_TRUE(endsInUuid(kUuid));
  EXPECT_TRUE(endsInUuid("/var/run/netns/cni-" + std::string(kUuid)));
  EXPECT_FALSE(endsInUuid(std::string(kUuid) + "/"));
  EXPECT_FALSE(endsInUuid("3F2A9C1E-0B7D-4E21-8F00-5A6B7C8D9E0F"));
  EXPECT_FALSE(endsInUuid("3f2a9c1e-0b7d-4e21-8f00-5a6b7c8d9e0g"));
  EXPECT_FALSE(endsInUuid(""));
}

}  // namespace
}  // namespace hostport::agent::core::packed
