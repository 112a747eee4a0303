#include "agent/core/packed_lease.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

namespace hostport::agent::core {
namespace {

IpAddress ip(const char* text) { return IpAddress::parse(text).value(); }

constexpr std::string_view kUuid = "3f2a9c1e-0b7d-4e21-8f00-5a6b7c8d9e0f";

PortGrant grant(uint16_t hostPort, std::string name = "web", uint16_t count = 1) {
  return PortGrant{std::move(name), PortProtocol::kTcp, hostPort, 8080, count, std::nullopt, false};
}

Lease podLease() {
  Lease lease;
  lease.key = {"0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef", "eth0"};
  lease.pod = {"games", "game-server-12345", std::string(kUuid)};
  lease.netns = "/var/run/netns/cni-" + std::string(kUuid);
  lease.pool = "default";
  lease.ports = {grant(30000)};
  lease.forwarding = Forwarding{.network = "k8s-pod-network",
                                .podV4 = IpPrefix{ip("10.244.1.17"), 24},
                                .podV6 = std::nullopt,
                                .snat = true,
                                .masqAll = false,
                                .conditionsV4 = "",
                                .conditionsV6 = ""};
  lease.netnsId = {.device = 4, .inode = 4026532871};
  return lease;
}

class PackedLeaseTest : public ::testing::Test {
 protected:
  // Packs, checks the unpacked lease and key against the original, and gives the references
  // back. `pool` stands in for lease.pool, as the allocator's canonical name does.
  void expectRoundTrip(const Lease& lease, const std::string& pool = "default") {
    PackedLease packed = PackedLease::pack(lease, pool, strings_);
    ASSERT_FALSE(packed.empty());
    Lease expected = lease;
    expected.pool = pool;
    EXPECT_EQ(packed.unpack(strings_), expected);
    EXPECT_EQ(packed.key(), lease.key);
    std::string key;
    PackedLease::packKey(lease.key, key);
    EXPECT_EQ(packed.keyBytes(), key);
    EXPECT_GE(packed.size(), key.size());
    packed.release(strings_);
    EXPECT_EQ(packed.size(), 0u);
    EXPECT_TRUE(packed.empty());
    EXPECT_EQ(strings_.size(), 0u) << "references left behind";
  }

  StringTable strings_;
};

TEST_F(PackedLeaseTest, RoundTripsATypicalPodInUnderAHundredAndTenBytes) {
  const Lease lease = podLease();
  expectRoundTrip(lease);
  PackedLease packed = PackedLease::pack(lease, "default", strings_);
  // Key 33 + 5, uid 17, netns UUID 17, pod name tail 6, grant 9, 4 interned ids, a count; then
  // the forwarding: flags, network id, pod address 5, netns device 1 and inode 5.
  EXPECT_EQ(packed.keyBytes().size(), 38u);
  EXPECT_EQ(packed.size(), 92u + 13u);
  packed.release(strings_);
}

TEST_F(PackedLeaseTest, RoundTripsAnEmptyLease) {
  expectRoundTrip(Lease{}, "");
  expectRoundTrip(Lease{});
}

TEST_F(PackedLeaseTest, RoundTripsHostileText) {
  const std::vector<std::string> texts = {
      "",
      "-",
      "--",
      "a-",
      "-a",
      "/",
      "//",
      "abc",                                                       // odd-length hex
      "0123456789ABCDEF0123456789ABCDEF0123456789ABCDEF01234567",  // uppercase hex
      "not hex at all",
      std::string(kUuid),
      "3F2A9C1E-0B7D-4E21-8F00-5A6B7C8D9E0F",
      "/proc/1234/ns/net",
      "/var/run/netns/" + std::string(kUuid),
      "relative-" + std::string(kUuid),
      std::string("nul\0inside", 10),
      std::string("\xff\xfe-\x80/", 5),
      std::string(4096, 'a'),
      std::string(4095, 'b') + "-",
      std::string(5000, '/'),
  };
  for (const auto& text : texts) {
    Lease lease = podLease();
    lease.key = {text, text};
    lease.pod = {text, text, text};
    lease.netns = text;
    lease.ports = {grant(30000, text)};
    expectRoundTrip(lease, text.empty() ? "p" : text);
  }
}

TEST_F(PackedLeaseTest, RoundTripsEveryKindOfGrant) {
  Lease lease = podLease();
  lease.ports.clear();
  const std::optional<IpAddress> addresses[] = {
      std::nullopt,          ip("10.0.0.7"),          ip("0.0.0.0"),
      ip("255.255.255.255"), ip("fd00::7"),           ip("::"),
      ip("::ffff:10.1.2.3"), ip("2001:db8::1:2:3:4"), ip("fe80::1")};
  uint16_t port = 1;
  for (const auto& address : addresses) {
    for (const auto protocol :
         {PortProtocol::kTcp, PortProtocol::kUdp, PortProtocol::kSctp, PortProtocol::kTcpUdp}) {
      lease.ports.push_back({"", protocol, port++, 80, 1, address, true});
      lease.ports.push_back({"rtp", protocol, port, 20000, 1024, address, false});
      port += 1024;
    }
  }
  lease.ports.push_back({"max", PortProtocol::kUdp, 65535, 65535, 1, std::nullopt, false});
  lease.ports.push_back({"zero", PortProtocol::kUdp, 0, 0, 0, std::nullopt, false});
  lease.ports.push_back({"wide", PortProtocol::kUdp, 1, 1, 65535, std::nullopt, false});
  // A protocol value no parser makes is still kept as it was.
  lease.ports.push_back({"odd", static_cast<PortProtocol>(7), 9, 9, 1, std::nullopt, false});
  lease.ports.push_back({"odder", static_cast<PortProtocol>(255), 9, 9, 1, std::nullopt, true});
  expectRoundTrip(lease);
}

TEST_F(PackedLeaseTest, RoundTripsEveryShapeOfForwarding) {
  Lease lease = podLease();
  expectRoundTrip(lease);
  lease.forwarding->podV6 = IpPrefix{ip("fd00:10:244::17"), 64};
  lease.forwarding->conditionsV4 = "ip saddr 10.0.0.0/8";
  expectRoundTrip(lease);
  lease.forwarding->podV4.reset();
  lease.forwarding->conditionsV4.clear();
  lease.forwarding->conditionsV6 = "ip6 saddr fd00::/8";
  lease.forwarding->snat = false;
  lease.forwarding->masqAll = true;
  lease.forwarding->network = "";
  expectRoundTrip(lease);
  lease.netnsId = {};
  expectRoundTrip(lease);
  lease.forwarding.reset();
  expectRoundTrip(lease);
  lease.netnsId = {.device = UINT64_MAX, .inode = UINT64_MAX};
  expectRoundTrip(lease);
}

TEST_F(PackedLeaseTest, RoundTripsTheMostGrantsALeaseMayHave) {
  Lease lease = podLease();
  lease.ports.clear();
  for (std::size_t i = 0; i < kMaxPortsPerRequest; ++i) {
    lease.ports.push_back(grant(static_cast<uint16_t>(1000 + i), "p" + std::to_string(i)));
  }
  expectRoundTrip(lease);
}

TEST_F(PackedLeaseTest, SharesInternedTextBetweenLeasesAndDropsItWithTheLast) {
  Lease first = podLease();
  Lease second = podLease();
  second.key.containerId = "ff";
  second.pod.name = "game-server-7";
  second.netns = "/var/run/netns/cni-00000000-0000-0000-0000-000000000000";
  PackedLease a = PackedLease::pack(first, "default", strings_);
  // Namespace, pod name head, netns head, pool and network name.
  EXPECT_EQ(strings_.size(), 5u);
  PackedLease b = PackedLease::pack(second, "default", strings_);
  EXPECT_EQ(strings_.size(), 5u);
  a.release(strings_);
  EXPECT_EQ(strings_.size(), 5u);
  EXPECT_EQ(b.unpack(strings_), second);
  b.release(strings_);
  EXPECT_EQ(strings_.size(), 0u);
}

TEST_F(PackedLeaseTest, GivesEqualKeyBytesExactlyForEqualKeys) {
  // Where the container ID ends and the ifname starts is part of the key.
  const std::vector<AttachmentKey> keys = {
      {"ab", "c"},  {"a", "bc"}, {"abc", ""}, {"", "abc"}, {"ab", "cd"},
      {"abcd", ""}, {"AB", "c"}, {"ab", "C"}, {"00", ""},  {std::string(1, '\0'), ""}};
  for (std::size_t i = 0; i < keys.size(); ++i) {
    std::string a;
    PackedLease::packKey(keys[i], a);
    for (std::size_t j = 0; j < keys.size(); ++j) {
      std::string b;
      PackedLease::packKey(keys[j], b);
      EXPECT_EQ(a == b, i == j) << keys[i].str() << " vs " << keys[j].str();
    }
  }
}

}  // namespace
}  // namespace hostport::agent::core
