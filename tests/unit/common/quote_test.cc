#include "common/quote.h"

#include <gtest/gtest.h>

#include <limits>
#include <nlohmann/json.hpp>
#include <string>

#include "common/bounded_json.h"

namespace hostport {
namespace {

using namespace std::string_literals;  // "\0"s keeps its NUL
using nlohmann::json;

TEST(QuoteTest, QuotesPlainText) {
  EXPECT_EQ(quoteText("eth0"), "\"eth0\"");
  EXPECT_EQ(quoteText(""), "\"\"");
  EXPECT_EQ(quoteText("a b/c:d'e"), "\"a b/c:d'e\"");
}

TEST(QuoteTest, EscapesQuotesAndBackslashes) {
  EXPECT_EQ(quoteText("a\"b"), R"("a\"b")");
  EXPECT_EQ(quoteText("a\\b"), R"("a\\b")");
  EXPECT_EQ(quoteText("\"\\\""), R"("\"\\\"")");
}

TEST(QuoteTest, EscapesNewlinesAndEveryOtherControlCharacter) {
  EXPECT_EQ(quoteText("a\nINFO forged"), R"("a\nINFO forged")");
  EXPECT_EQ(quoteText("\r\t\b\f"), R"("\r\t\b\f")");
  EXPECT_EQ(quoteText("\0"s), R"("\u0000")");
  EXPECT_EQ(quoteText("\x01\x1b\x1f"), R"("\u0001\u001b\u001f")");
  EXPECT_EQ(quoteText("\v"), R"("\u000b")");
}

TEST(QuoteTest, EscapesDel) {
  EXPECT_EQ(quoteText("\x7f"), R"("\u007f")");
  EXPECT_EQ(quoteText("a\x7f\x7f"
                      "b"),
            R"("a\u007f\u007fb")");
}

TEST(QuoteTest, EscapesNonAsciiAsUnicode) {
  EXPECT_EQ(quoteText("\xc3\xa9th0"), R"("\u00e9th0")");          // é
  EXPECT_EQ(quoteText("\xe2\x82\xac"), R"("\u20ac")");            // €
  EXPECT_EQ(quoteText("\xf0\x9f\x98\x80"), R"("\ud83d\ude00")");  // an emoji: a surrogate pair
}

TEST(QuoteTest, ReplacesInvalidUtf8) {
  EXPECT_EQ(quoteText("eth\xff"), R"("eth\ufffd")");
  EXPECT_EQ(quoteText("\xff\xfe"), R"("\ufffd\ufffd")");
  EXPECT_EQ(quoteText("\x80"), R"("\ufffd")");            // a continuation byte alone
  EXPECT_EQ(quoteText("a\xc3"), R"("a\ufffd")");          // a sequence cut short at the end
  EXPECT_EQ(quoteText("\xc3(x"), R"("\ufffd(x")");        // a sequence cut short in the middle
  EXPECT_EQ(quoteText("\xc0\xaf"), R"("\ufffd\ufffd")");  // an overlong '/'
}

TEST(QuoteTest, PrintsEveryByteAsPrintableAscii) {
  for (int byte = 0; byte <= 0xff; ++byte) {
    const std::string quoted = quoteText(std::string(3, static_cast<char>(byte)));
    for (const char c : quoted) {
      EXPECT_TRUE(c >= ' ' && c < '\x7f') << byte << ": " << quoted;
    }
    EXPECT_TRUE(quoted.starts_with('"') && quoted.ends_with('"')) << byte << ": " << quoted;
  }
}

TEST(QuoteTest, CutsAfterTheLimitAndSaysSo) {
  const std::string exact(kMaxEchoedBytes, 'x');
  EXPECT_EQ(quoteText(exact), "\"" + exact + "\"");
  EXPECT_EQ(quoteText(exact + "y"), "\"" + exact + "\"...");
  EXPECT_EQ(quoteText(std::string(100000, 'x')), "\"" + exact + "\"...");
}

TEST(QuoteTest, CutsAtTheLimitTheCallerGives) {
  EXPECT_EQ(quoteText("abcdef", 3), "\"abc\"...");
  EXPECT_EQ(quoteText("abc", 3), "\"abc\"");
  EXPECT_EQ(quoteText("abc", 0), "\"\"...");
  EXPECT_EQ(quoteText("", 0), "\"\"");
  const std::string key = std::string(100, 'c') + "/" + std::string(15, 'e');
  EXPECT_EQ(quoteText(key, key.size()), "\"" + key + "\"");
}

TEST(QuoteTest, CountsTheLimitInInputBytes) {
  // 64 newlines fit, though each prints as two characters.
  std::string escaped;
  for (std::size_t i = 0; i < kMaxEchoedBytes; ++i) escaped += "\\n";
  EXPECT_EQ(quoteText(std::string(kMaxEchoedBytes, '\n')), "\"" + escaped + "\"");
}

TEST(QuoteTest, ReplacesACharacterTheCutSplits) {
  // 63 bytes of 'a', then the two bytes of é: the cut keeps only its first byte.
  EXPECT_EQ(quoteText(std::string(63, 'a') + "\xc3\xa9"),
            "\"" + std::string(63, 'a') + "\\ufffd\"...");
}

TEST(QuoteTest, EchoesStringsThroughQuoteText) {
  EXPECT_EQ(echo(json("eth0")), "\"eth0\"");
  EXPECT_EQ(echo(json("a\"b\nc\x7f")), R"("a\"b\nc\u007f")");
  EXPECT_EQ(echo(json(std::string(100, 'x'))), "\"" + std::string(kMaxEchoedBytes, 'x') + "\"...");
  EXPECT_EQ(echo(json("")), "\"\"");
}

TEST(QuoteTest, EchoesOtherScalarsAsJson) {
  EXPECT_EQ(echo(json(nullptr)), "null");
  EXPECT_EQ(echo(json(true)), "true");
  EXPECT_EQ(echo(json(false)), "false");
  EXPECT_EQ(echo(json(5)), "5");
  EXPECT_EQ(echo(json(-1)), "-1");
  EXPECT_EQ(echo(json(std::numeric_limits<uint64_t>::max())), "18446744073709551615");
  EXPECT_EQ(echo(json(80.5)), "80.5");
  EXPECT_EQ(echo(json(1e20)), "1e+20");
}

TEST(QuoteTest, EchoesObjectsAndArraysWithoutTheirContent) {
  EXPECT_EQ(echo(json::object()), "{...}");
  EXPECT_EQ(echo(json{{"a", "b\nc"}}), "{...}");
  EXPECT_EQ(echo(json::array()), "[...]");
  EXPECT_EQ(echo(json::array({1, "two", json::array({3})})), "[...]");
  // Binary values never come from JSON text, but their dump would be as long as they are.
  EXPECT_EQ(echo(json::binary({1, 2, 3})), "[...]");
}

TEST(QuoteTest, EchoesADiscardedValueAsNlohmannNamesIt) {
  EXPECT_EQ(echo(json(json::value_t::discarded)), "<discarded>");
}

}  // namespace
}  // namespace hostport
