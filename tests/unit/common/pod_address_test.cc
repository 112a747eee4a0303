#include "common/pod_address.h"

#include <gtest/gtest.h>

#include <string>
#include <utility>
#include <vector>

namespace hostport {
namespace {

IpPrefix prefix(const char* cidr) {
  auto parsed = IpPrefix::parse(cidr);
  EXPECT_TRUE(parsed) << cidr;
  return parsed.value_or(IpPrefix{});
}

// Every class of address no pod has, in both families, with what the refusal must say.
TEST(PodAddressTest, RefusesEveryAddressThatIsNoPodsAsTarget) {
  const std::vector<std::pair<const char*, const char*>> refused = {
      {"0.0.0.0/0", "0.0.0.0/8"},
      {"0.0.0.0/24", "0.0.0.0/8"},
      {"0.1.2.3/24", "0.0.0.0/8"},
      {"127.0.0.1/8", "loopback"},
      {"127.0.0.1/32", "loopback"},
      {"127.255.0.9/16", "loopback"},
      {"169.254.169.254/16", "link-local"},
      {"169.254.1.5/32", "link-local"},
      {"224.0.0.1/24", "multicast"},
      {"239.255.255.250/32", "multicast"},
      {"255.255.255.255/32", "broadcast"},
      {"255.255.255.255/8", "broadcast"},
      {"::/0", "unspecified"},
      {"::/128", "unspecified"},
      {"::1/128", "loopback"},
      {"::1/64", "loopback"},
      {"::ffff:127.0.0.1/96", "IPv4-mapped"},
      {"::ffff:10.88.0.5/120", "IPv4-mapped"},
      {"fe80::1/64", "link-local"},
      {"febf::1/64", "link-local"},
      {"ff02::1/64", "multicast"},
      {"ff05::1:3/128", "multicast"},
  };
  for (const auto& [cidr, says] : refused) {
    const Problem problem = podAddressProblem(prefix(cidr));
    ASSERT_TRUE(problem) << cidr;
    EXPECT_NE(problem->find(says), std::string_view::npos) << cidr << ": " << *problem;
  }
}

TEST(PodAddressTest, RefusesAPrefixWiderThanAnyPodSubnet) {
  for (const char* cidr : {"10.88.0.5/0", "10.88.0.5/1", "10.88.0.5/7", "192.0.2.5/4", "fd00::5/0",
                           "fd00::5/8", "2001:db8::5/32", "fd00:1:2::5/47"}) {
    const Problem problem = podAddressProblem(prefix(cidr));
    ASSERT_TRUE(problem) << cidr;
    EXPECT_NE(problem->find("has a prefix wider than"), std::string_view::npos) << *problem;
  }
}

TEST(PodAddressTest, RefusesTheNetworkAndBroadcastAddressOfItsOwnSubnet) {
  const std::vector<std::pair<const char*, const char*>> refused = {
      {"10.88.0.0/24", "network address"}, {"10.88.0.255/24", "broadcast address"},
      {"10.0.0.0/8", "network address"},   {"10.255.255.255/8", "broadcast address"},
      {"10.88.0.4/30", "network address"}, {"10.88.0.7/30", "broadcast address"},
      {"fd00:88::/64", "Subnet-Router"},   {"fd00:88::/126", "Subnet-Router"},
  };
  for (const auto& [cidr, says] : refused) {
    const Problem problem = podAddressProblem(prefix(cidr));
    ASSERT_TRUE(problem) << cidr;
    EXPECT_NE(problem->find(says), std::string_view::npos) << cidr << ": " << *problem;
  }
}

// What bridge/host-local, Calico, Cilium, flannel and cloud CNIs hand pods.
TEST(PodAddressTest, AcceptsWhatPodNetworksHandOut) {
  for (const char* cidr :
       {"10.88.0.5/24", "10.88.0.5/16", "10.244.1.7/24", "10.0.0.5/8", "192.168.5.9/32",
        "10.88.0.4/31", "10.88.0.5/31", "100.64.0.9/10", "240.0.0.5/24", "172.16.0.1/12",
        "fd00:88::5/64", "fd00:88::/127", "fd00:88::1/127", "fd00:10:244:1::a/64", "2001:db8::5/48",
        "2001:db8:1::5/128", "fd00::/128", "10.88.0.0/32"}) {
    const Problem problem = podAddressProblem(prefix(cidr));
    EXPECT_FALSE(problem) << cidr << ": " << problem.value_or("");
  }
}

}  // namespace
}  // namespace hostport
