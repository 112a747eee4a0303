// metricsAddress's grammar (agent/config/listen_address.h): IP literals with a port, IPv6 in
// brackets, and errors that quote the text and say the rule.

#include "agent/config/listen_address.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

namespace hostport::agent::config {
namespace {

using ::testing::HasSubstr;

std::string errorOf(std::string_view text) {
  auto parsed = parseListenAddress(text);
  EXPECT_FALSE(parsed.has_value()) << text << " parsed as " << parsed->str();
  if (parsed) return "";
  EXPECT_EQ(parsed.error().code, ErrorCode::kInvalidArgument);
  return parsed.error().message;
}

TEST(ListenAddressTest, ParsesIpv4AndBracketedIpv6) {
  for (const auto* text :
       {"127.0.0.1:9810", "0.0.0.0:1", "[::1]:9810", "[::]:65535", "[fd00::5]:9810"}) {
    auto parsed = parseListenAddress(text);
    ASSERT_TRUE(parsed.has_value()) << text << ": " << parsed.error().message;
    EXPECT_EQ(parsed->str(), text);
  }
  auto v6 = parseListenAddress("[::1]:9810");
  ASSERT_TRUE(v6.has_value());
  EXPECT_EQ(v6->address.family(), Family::kIPv6);
  EXPECT_EQ(v6->port, 9810);
}

TEST(ListenAddressTest, RefusesNamesAndBareIpv6) {
  EXPECT_THAT(errorOf("localhost:9810"), HasSubstr("\"localhost:9810\" is not host:port"));
  EXPECT_THAT(errorOf("::1:9810"), HasSubstr("an IPv6 host goes in brackets"));
  EXPECT_THAT(errorOf("[127.0.0.1]:9810"), HasSubstr("only an IPv6 host goes in brackets"));
  EXPECT_THAT(errorOf("[::1:9810"), HasSubstr("is not host:port"));
}

TEST(ListenAddressTest, RefusesMissingAndOutOfRangePorts) {
  EXPECT_THAT(errorOf("127.0.0.1"), HasSubstr("is not host:port"));
  EXPECT_THAT(errorOf("127.0.0.1:"), HasSubstr("has no port number"));
  EXPECT_THAT(errorOf("127.0.0.1:http"), HasSubstr("has no port number"));
  EXPECT_THAT(errorOf("127.0.0.1:-1"), HasSubstr("has no port number"));
  EXPECT_THAT(errorOf("127.0.0.1:0"), HasSubstr("outside 1-65535"));
  EXPECT_THAT(errorOf("127.0.0.1:65536"), HasSubstr("outside 1-65535"));
  EXPECT_THAT(errorOf("127.0.0.1:123456"), HasSubstr("has no port number"));
  EXPECT_THAT(errorOf(":9810"), HasSubstr("is not host:port"));
  EXPECT_THAT(errorOf(""), HasSubstr("is not host:port"));
}

}  // namespace
}  // namespace hostport::agent::config
