#include "common/ip_address.h"

#include <gtest/gtest.h>

#include <span>
#include <utility>
#include <vector>

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

TEST(IpPrefixTest, ContainsTheAddressesOfItsRangeOnly) {
  const auto subnet = *IpPrefix::parse("10.88.0.5/16");
  EXPECT_TRUE(subnet.contains(*IpAddress::parse("10.88.0.0")));
  EXPECT_TRUE(subnet.contains(*IpAddress::parse("10.88.255.255")));
  EXPECT_FALSE(subnet.contains(*IpAddress::parse("10.89.0.0")));
  EXPECT_FALSE(subnet.contains(*IpAddress::parse("10.87.255.255")));
  EXPECT_FALSE(subnet.contains(*IpAddress::parse("::a58:5"))) << "another family";
  EXPECT_TRUE(IpPrefix::parse("fd00::/64")->contains(*IpAddress::parse("fd00::ffff:1")));
}

TEST(IpPrefixTest, OverlapsWhenOneHoldsTheOther) {
  const auto wide = *IpPrefix::parse("10.88.0.0/16");
  EXPECT_TRUE(wide.overlaps(*IpPrefix::parse("10.88.5.0/24")));
  EXPECT_TRUE(IpPrefix::parse("10.88.5.0/24")->overlaps(wide));
  EXPECT_TRUE(wide.overlaps(wide));
  EXPECT_FALSE(wide.overlaps(*IpPrefix::parse("10.89.0.0/16")));
  EXPECT_FALSE(IpPrefix::parse("10.88.4.0/24")->overlaps(*IpPrefix::parse("10.88.5.0/24")));
}

TEST(IpPrefixTest, RejectsBadPrefixLengths) {
  for (const auto* bad :
       {"10.0.0.1", "10.0.0.1/33", "10.0.0.1/-1", "10.0.0.1/", "fd00::/129", "10.0.0.1/8x"}) {
    EXPECT_FALSE(IpPrefix::parse(bad)) << bad;
  }
}

TEST(IpAddressTest, HoldsTheBytesInNetworkOrder) {
  const auto v4 = *IpAddress::parse("10.88.0.5");
  EXPECT_EQ(std::vector<uint8_t>(v4.bytes().begin(), v4.bytes().end()),
            (std::vector<uint8_t>{10, 88, 0, 5}));
  const auto v6 = *IpAddress::parse("2001:db8::1");
  ASSERT_EQ(v6.bytes().size(), 16u);
  EXPECT_EQ(v6.bytes()[0], 0x20);
  EXPECT_EQ(v6.bytes()[1], 0x01);
  EXPECT_EQ(v6.bytes()[15], 0x01);
}

/// Whether bytes() can be called on an address of value category `T`.
template <typename T>
concept LendsBytes = requires(T&& address) {
  std::forward<T>(address).bytes();
};

TEST(IpAddressTest, LendsItsBytesOnlyFromAnAddressThatOutlivesTheCall) {
  static_assert(LendsBytes<IpAddress&>);
  static_assert(LendsBytes<const IpAddress&>);
  static_assert(!LendsBytes<IpAddress>, "a temporary's bytes would dangle");
  static_assert(!LendsBytes<const IpAddress>);
  const IpAddress named = *IpAddress::parse("10.88.0.5");
  EXPECT_EQ(named.bytes().size(), 4u);
}

TEST(IpAddressTest, ComesBackFromItsBytes) {
  for (const auto* text : {"10.88.0.5", "0.0.0.0", "255.255.255.255", "::", "::1", "fd00::5",
                           "2001:db8:1:2:3:4:5:6", "::ffff:1.2.3.4"}) {
    const auto address = *IpAddress::parse(text);
    const auto back = IpAddress::fromBytes(address.family(), address.bytes());
    ASSERT_TRUE(back) << text;
    EXPECT_EQ(*back, address) << text;
    EXPECT_EQ(back->str(), address.str()) << text;
  }
}

TEST(IpAddressTest, RefusesBytesOfTheWrongSize) {
  const uint8_t five[] = {1, 2, 3, 4, 5};
  EXPECT_FALSE(IpAddress::fromBytes(Family::kIPv4, five));
  EXPECT_FALSE(IpAddress::fromBytes(Family::kIPv6, std::span(five, 4)));
  EXPECT_FALSE(IpAddress::fromBytes(Family::kIPv4, {}));
  EXPECT_EQ(IpAddress::fromBytes(Family::kIPv4, std::span(five, 4))->str(), "1.2.3.4");
}

TEST(IpAddressTest, EqualAddressesCompareEqualWhateverTheirText) {
  EXPECT_EQ(*IpAddress::parse("2001:DB8:0:0::1"), *IpAddress::parse("2001:db8::1"));
  EXPECT_NE(*IpAddress::parse("10.0.0.1"), *IpAddress::parse("10.0.0.2"));
  // The same bytes in two families are two addresses.
  EXPECT_NE(IpAddress::unspecified(Family::kIPv4), IpAddress::unspecified(Family::kIPv6));
}

TEST(IpAddressTest, OrdersNumericallyWithIpv4First) {
  EXPECT_LT(*IpAddress::parse("10.0.0.9"), *IpAddress::parse("10.0.0.10"));
  EXPECT_LT(*IpAddress::parse("255.255.255.255"), *IpAddress::parse("::"));
}

TEST(IpAddressTest, NamesTheUnspecifiedAddressOfEachFamily) {
  EXPECT_EQ(IpAddress::unspecified(Family::kIPv4).str(), "0.0.0.0");
  EXPECT_EQ(IpAddress::unspecified(Family::kIPv6).str(), "::");
  EXPECT_TRUE(IpAddress::unspecified(Family::kIPv6).isUnspecified());
  EXPECT_EQ(IpAddress(), IpAddress::unspecified(Family::kIPv4));
  EXPECT_FALSE(IpAddress::parse("::1")->isUnspecified());
}

TEST(IpAddressTest, DescribesEndpointsAsPeopleWriteThem) {
  EXPECT_EQ(describeEndpoint(*IpAddress::parse("10.88.0.5"), 80), "10.88.0.5:80");
  EXPECT_EQ(describeEndpoint(*IpAddress::parse("fd00::5"), 8080), "[fd00::5]:8080");
}

TEST(IpPrefixTest, ComputesTheLastAddressOfAPrefix) {
  EXPECT_EQ(IpPrefix::parse("10.88.0.5/16")->lastAddress().str(), "10.88.255.255");
  EXPECT_EQ(IpPrefix::parse("10.88.0.5/32")->lastAddress().str(), "10.88.0.5");
  EXPECT_EQ(IpPrefix::parse("127.0.0.0/8")->lastAddress().str(), "127.255.255.255");
  EXPECT_EQ(IpPrefix::parse("0.0.0.0/0")->lastAddress().str(), "255.255.255.255");
  EXPECT_EQ(IpPrefix::parse("fd00::5/127")->lastAddress().str(), "fd00::5");
  EXPECT_EQ(IpPrefix::parse("fd00:1:2:3::5/64")->lastAddress().str(),
            "fd00:1:2:3:ffff:ffff:ffff:ffff");
}

}  // namespace
}  // namespace hostport
