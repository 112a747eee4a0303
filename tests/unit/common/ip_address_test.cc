#include "common/ip_address.h"

#include <gtest/gtest.h>

namespace hostport {
namespace {

TEST(IpAddressTest, CanonicalisesBothFamilies) {
  EXPECT_EQ(IpAddress::parse("010.1.2.3").has_value(), false);  // inet_pton refuses octal-looking
  EXPECT_EQ(IpAddress::parse("2001:DB8:0:0::1")->str(), "2001:db8::1");
  EXPECT_EQ(IpAddress::parse("10.88.0.5")->family(), Family::kIPv4);
  EXPECT_EQ(IpAddress::parse("::ffff:1.2.3.4")->family(), Family::kIPv6);
  EXPECT_TRUE(IpAddress::parse("0.0.0.0")->isUnspecified());
  EXPECT_TRUE(IpAddress::parse("::")->isUnspecified());
}

TEST(IpAddressTest, RejectsWhatIsNotAnAddress) {
  for (const auto* bad :
       {"", "1.2.3", "1.2.3.4.5", "256.1.1.1", "10.0.0.1/24", "fe80::1%eth0", "x", " 1.2.3.4"}) {
    auto parsed = IpAddress::parse(bad);
    ASSERT_FALSE(parsed) << bad;
    EXPECT_EQ(parsed.error().code, ErrorCode::kInvalidArgument);
  }
  EXPECT_FALSE(IpAddress::parse(std::string(1000, '1')));
}

TEST(IpPrefixTest, ComputesTheNetworkOfAnAddress) {
  EXPECT_EQ(IpPrefix::parse("10.88.0.5/16")->network().str(), "10.88.0.0/16");
  EXPECT_EQ(IpPrefix::parse("10.88.7.5/21")->network().str(), "10.88.0.0/21");
  EXPECT_EQ(IpPrefix::parse("10.88.0.5/32")->network().str(), "10.88.0.5/32");
  EXPECT_EQ(IpPrefix::parse("10.88.0.5/0")->network().str(), "0.0.0.0/0");
  EXPECT_EQ(IpPrefix::parse("fd00:1:2:3::5/64")->network().str(), "fd00:1:2:3::/64");
  EXPECT_EQ(IpPrefix::parse("fd00::5/127")->network().str(), "fd00::4/127");
}

TEST(IpPrefixTest, RejectsBadPrefixLengths) {
  for (const auto* bad :
       {"10.0.0.1", "10.0.0.1/33", "10.0.0.1/-1", "10.0.0.1/", "fd00::/129", "10.0.0.1/8x"}) {
    EXPECT_FALSE(IpPrefix::parse(bad)) << bad;
  }
}

}  // namespace
}  // namespace hostport
