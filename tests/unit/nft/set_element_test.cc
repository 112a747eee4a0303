// The element encoding must be byte for byte what nft(8) writes, or `nft list` and libnftables
// would read our elements differently. The expected bytes below were captured from
// `nft --debug=netlink add element ...` (nftables 1.0.6).

#include "nft/set_element.h"

#include <gtest/gtest.h>

#include "nft/table_layout.h"

namespace hostport::nft {
namespace {

IpAddress ip(const char* text) { return *IpAddress::parse(text); }
IpPrefix prefix(const char* text) { return *IpPrefix::parse(text); }

ByteString bytes(std::initializer_list<int> values) {
  ByteString out;
  for (const int value : values) out.push_back(std::byte(value));
  return out;
}

TEST(SetElementTest, ForwardMatchesNftsOwnBytes) {
  const Forward forward{Protocol::kTcp, std::nullopt, 20001, ip("10.1.1.1"), 80, ""};
  const SetElement element = elementOf(forward, "abc/eth0");
  EXPECT_EQ(element.set, kPortsMap);
  EXPECT_EQ(element.family, Family::kIPv4);
  EXPECT_EQ(element.key, bytes({6, 0, 0, 0, 0x4e, 0x21, 0, 0}));
  EXPECT_EQ(element.data, bytes({10, 1, 1, 1, 0, 80, 0, 0}));
  EXPECT_TRUE(element.keyEnd.empty());
  EXPECT_EQ(element.userdata, bytes({0, 9, 'a', 'b', 'c', '/', 'e', 't', 'h', '0', 0}));
}

TEST(SetElementTest, HostIpForwardMatchesNftsOwnBytes) {
  const Forward forward{Protocol::kUdp, ip("192.0.2.1"), 20001, ip("10.1.1.1"), 80, ""};
  const SetElement element = elementOf(forward, "abc/eth0");
  EXPECT_EQ(element.set, kHostIpPortsMap);
  EXPECT_EQ(element.key, bytes({192, 0, 2, 1, 17, 0, 0, 0, 0x4e, 0x21, 0, 0}));
}

TEST(SetElementTest, MasqueradeIsThePodAddressInItsScopesSet) {
  const SetElement element =
      elementOf(Masquerade{ip("10.1.1.1"), MasqueradeScope::kPodSubnet}, "abc/eth0");
  EXPECT_EQ(element.set, kSnatPodsSet);
  EXPECT_EQ(element.key, bytes({10, 1, 1, 1}));
  EXPECT_TRUE(element.keyEnd.empty());
  EXPECT_TRUE(element.data.empty());
  EXPECT_EQ(element.userdata, bytes({0, 9, 'a', 'b', 'c', '/', 'e', 't', 'h', '0', 0}));
  EXPECT_EQ(elementOf(Masquerade{ip("10.1.1.1"), MasqueradeScope::kEverySource}, "abc/eth0").set,
            kMasqAllSet);
}

TEST(SetElementTest, PodSubnetIsTheSubnetOnBothSidesWithoutOwner) {
  // From the host address the CNI result gives: the element holds the network.
  const SetElement element = podSubnetElement(prefix("10.88.0.5/16"));
  EXPECT_EQ(element.set, kPodSubnetsSet);
  EXPECT_EQ(element.key, bytes({10, 88, 0, 0, 10, 88, 0, 0}));
  EXPECT_EQ(element.keyEnd, bytes({10, 88, 255, 255, 10, 88, 255, 255}));
  EXPECT_TRUE(element.userdata.empty());
}

TEST(SetElementTest, ForwardsRoundTrip) {
  const std::vector<Forward> forwards = {
      {Protocol::kTcp, std::nullopt, 0, ip("10.88.0.5"), 65535, ""},
      {Protocol::kUdp, std::nullopt, 65535, ip("10.88.0.5"), 1, ""},
      {Protocol::kSctp, ip("192.0.2.1"), 9000, ip("10.88.0.5"), 9, ""},
      {Protocol::kTcp, std::nullopt, 8080, ip("fd00::5"), 80, ""},
      {Protocol::kUdp, ip("2001:db8::1"), 53, ip("fd00::ffff:1"), 5353, ""},
  };
  for (const auto& forward : forwards) {
    const auto back = forwardOf(elementOf(forward, "owner/eth0"));
    ASSERT_TRUE(back) << describe(forward);
    EXPECT_EQ(back->forward, forward);
    EXPECT_EQ(back->owner, "owner/eth0");
    EXPECT_FALSE(back->ruleHandle);
  }
}

TEST(SetElementTest, MasqueradesAndPodSubnetsRoundTrip) {
  for (const char* pod : {"10.88.0.5", "fd00::5"}) {
    for (const auto scope : {MasqueradeScope::kPodSubnet, MasqueradeScope::kEverySource}) {
      const Masquerade masquerade{ip(pod), scope};
      const auto back = masqueradeOf(elementOf(masquerade, "o/eth0"));
      ASSERT_TRUE(back) << describe(masquerade);
      EXPECT_EQ(back->masquerade, masquerade);
      EXPECT_EQ(back->owner, "o/eth0");
    }
  }
  for (const char* subnet : {"10.88.0.0/16", "10.88.0.5/32", "0.0.0.0/0", "fd00::/64", "::/0"}) {
    EXPECT_EQ(podSubnetOf(podSubnetElement(prefix(subnet))), prefix(subnet)) << subnet;
  }
}

TEST(SetElementTest, RefusesBytesWeDidNotWrite) {
  SetElement element =
      elementOf(Forward{Protocol::kTcp, std::nullopt, 8080, ip("10.88.0.5"), 80, ""}, "o/eth0");
  auto withKey = [&](ByteString key) {
    SetElement changed = element;
    changed.key = std::move(key);
    return forwardOf(changed);
  };
  EXPECT_FALSE(withKey(bytes({99, 0, 0, 0, 0x1f, 0x90, 0, 0})));    // protocol 99
  EXPECT_FALSE(withKey(bytes({6, 1, 0, 0, 0x1f, 0x90, 0, 0})));     // padding not zero
  EXPECT_FALSE(withKey(bytes({6, 0, 0, 0, 0x1f, 0x90, 0, 1})));     // padding not zero
  EXPECT_FALSE(withKey(bytes({6, 0, 0, 0, 0x1f, 0x90, 0})));        // short
  EXPECT_FALSE(withKey(bytes({6, 0, 0, 0, 0x1f, 0x90, 0, 0, 0})));  // long
  SetElement wrongSet = element;
  wrongSet.set = "other";
  EXPECT_FALSE(forwardOf(wrongSet));
  SetElement v6 = element;
  v6.family = Family::kIPv6;  // a v4 address where a v6 one belongs
  EXPECT_FALSE(forwardOf(v6));

  SetElement masq = elementOf(Masquerade{ip("10.88.0.5"), MasqueradeScope::kPodSubnet}, "o/eth0");
  SetElement range = masq;
  range.keyEnd = bytes({10, 88, 0, 6});
  EXPECT_FALSE(masqueradeOf(range));
  SetElement subnet = podSubnetElement(prefix("10.0.0.0/8"));
  SetElement notAPrefix = subnet;
  notAPrefix.key = bytes({10, 0, 0, 1, 10, 0, 0, 1});
  EXPECT_FALSE(podSubnetOf(notAPrefix));
  SetElement twoSubnets = subnet;
  twoSubnets.keyEnd = bytes({10, 255, 255, 255, 10, 0, 255, 255});
  EXPECT_FALSE(podSubnetOf(twoSubnets));
  EXPECT_FALSE(masqueradeOf(subnet));
  EXPECT_FALSE(podSubnetOf(masq));
}

TEST(SetElementTest, CommentIsReadFromAnyPositionAndSurvivesGarbage) {
  EXPECT_EQ(commentOf(commentUserdata("a/eth0")), "a/eth0");
  ByteString flagsFirst = bytes({1, 4, 0, 0, 0, 1});  // another TLV (flags) before the comment
  const ByteString comment = commentUserdata("b/net1");
  flagsFirst.insert(flagsFirst.end(), comment.begin(), comment.end());
  EXPECT_EQ(commentOf(flagsFirst), "b/net1");
  EXPECT_EQ(commentOf(bytes({0, 200, 'x'})), "");  // length past the end
  EXPECT_EQ(commentOf(bytes({0})), "");
  EXPECT_EQ(commentOf({}), "");
  EXPECT_EQ(commentOf(bytes({0, 3, 'a', 'b', 'c'})), "abc");  // no NUL: still bounded
}

}  // namespace
}  // namespace hostport::nft
