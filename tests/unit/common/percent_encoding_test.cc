#include "common/percent_encoding.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cctype>

namespace hostport {
namespace {

TEST(PercentEncodingTest, RoundTripsEveryByte) {
  std::string all;
  for (int c = 0; c < 256; ++c) all += static_cast<char>(c);
  const std::string encoded = percentEncode(all);
  EXPECT_TRUE(std::ranges::all_of(encoded, [](char c) {
    return std::isalnum(static_cast<unsigned char>(c)) || std::string_view("-._~%").contains(c);
  }));
  EXPECT_EQ(percentDecode(encoded).value(), all);
  EXPECT_EQ(percentEncode("a-b_c.d~e"), "a-b_c.d~e");
  EXPECT_EQ(percentEncode("a/b?c"), "a%2Fb%3Fc");
  EXPECT_EQ(percentEncode("spec.nodeName=node-a"), "spec.nodeName%3Dnode-a");
  EXPECT_EQ(percentDecode("a%2fb+c").value(), "a/b+c");
}

TEST(PercentEncodingTest, RejectsBadEscapes) {
  for (const std::string bad : {"%", "%2", "%zz", "a%g1", "abc%"}) {
    const auto decoded = percentDecode(bad);
    ASSERT_FALSE(decoded.has_value()) << bad;
    EXPECT_EQ(decoded.error().code, ErrorCode::kInvalidArgument);
  }
}

}  // namespace
}  // namespace hostport
