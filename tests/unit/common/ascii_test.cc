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
  }
}

TEST(AsciiTest, PutsNoByteAboveAsciiInAnyClass) {
  for (int byte = 0x80; byte <= 0xff; ++byte) {
    const char c = static_cast<char>(byte);
    EXPECT_FALSE(ascii::isAlnum(c) || ascii::isSpace(c) || ascii::isPrint(c)) << byte;
    EXPECT_EQ(ascii::toLower(c), c) << byte;
  }
}

}  // namespace
}  // namespace hostport
