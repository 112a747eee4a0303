#include "common/ascii.h"

#include <gtest/gtest.h>

#include <cctype>
#include <clocale>

namespace hostport {
namespace {

TEST(AsciiTest, AgreesWithCctypeInTheCLocaleForEveryByte) {
  ASSERT_NE(std::setlocale(LC_ALL, "C"), nullptr);
  for (int byte = 0; byte <= 0xff; ++byte) {
    const char c = static_cast<char>(byte);
    EXPECT_EQ(ascii::isDigit(c), std::isdigit(byte) != 0) << byte;
    EXPECT_EQ(ascii::isLower(c), std::islower(byte) != 0) << byte;
    EXPECT_EQ(ascii::isUpper(c), std::isupper(byte) != 0) << byte;
    EXPECT_EQ(ascii::isAlnum(c), std::isalnum(byte) != 0) << byte;
    EXPECT_EQ(ascii::isSpace(c), std::isspace(byte) != 0) << byte;
    EXPECT_EQ(ascii::isGraph(c), std::isgraph(byte) != 0) << byte;
    EXPECT_EQ(ascii::isPrint(c), std::isprint(byte) != 0) << byte;
    EXPECT_EQ(ascii::toLower(c), static_cast<char>(std::tolower(byte))) << byte;
    EXPECT_EQ(ascii::toUpper(c), static_cast<char>(std::toupper(byte))) << byte;
  }
}

TEST(AsciiTest, PutsNoByteAboveAsciiInAnyClass) {
  for (int byte = 0x80; byte <= 0xff; ++byte) {
    const char c = static_cast<char>(byte);
    EXPECT_FALSE(ascii::isAlnum(c) || ascii::isSpace(c) || ascii::isPrint(c)) << byte;
    EXPECT_EQ(ascii::toLower(c), c) << byte;
    EXPECT_EQ(ascii::toUpper(c), c) << byte;
  }
}

TEST(AsciiTest, UppercaseRaisesOnlyAsciiSmallLetters) {
  EXPECT_EQ(ascii::uppercase("udp"), "UDP");
  EXPECT_EQ(ascii::uppercase("web-1_x"), "WEB-1_X");
  EXPECT_EQ(ascii::uppercase(std::string_view("a\xc3\xa4\0b", 5)),
            std::string_view("A\xc3\xa4\0B", 5));
}

TEST(AsciiTest, LowercaseLowersOnlyAsciiCapitals) {
  EXPECT_EQ(ascii::lowercase("HostPort"), "hostport");
  EXPECT_EQ(ascii::lowercase("TCP-UDP_9.z"), "tcp-udp_9.z");
  EXPECT_EQ(ascii::lowercase(""), "");
  // Non-ASCII bytes (UTF-8 for a capital A with umlaut) and NUL are kept, not folded by a locale.
  EXPECT_EQ(ascii::lowercase(std::string_view("A\xc3\x84\0B", 5)),
            std::string_view("a\xc3\x84\0b", 5));
}

TEST(AsciiTest, EqualsIgnoreCaseComparesWholeTextsWithCapitalsLowered) {
  EXPECT_TRUE(ascii::equalsIgnoreCase("TCP", "tcp"));
  EXPECT_TRUE(ascii::equalsIgnoreCase("sCtP", "SctP"));
  EXPECT_TRUE(ascii::equalsIgnoreCase("", ""));
  EXPECT_FALSE(ascii::equalsIgnoreCase("tcp", "tcpudp"));
  EXPECT_FALSE(ascii::equalsIgnoreCase("tcpudp", "tcp"));
  EXPECT_FALSE(ascii::equalsIgnoreCase("tcp", "udp"));
  // '@' and '[' sit next to 'A' and 'Z'; only the 26 capitals fold.
  EXPECT_FALSE(ascii::equalsIgnoreCase("@", "`"));
  EXPECT_FALSE(ascii::equalsIgnoreCase("[", "{"));
  EXPECT_FALSE(ascii::equalsIgnoreCase("\xc3\x84", "\xc3\xa4"));
  static_assert(ascii::equalsIgnoreCase("HostIP", "hostip"));
}

}  // namespace
}  // namespace hostport
