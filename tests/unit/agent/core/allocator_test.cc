#include "agent/core/allocator.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <random>
#include <set>

#include "tests/fakes/fake_port_probe.h"
#include "tests/support/result_assertions.h"

namespace hostport::agent::core {
namespace {

IpAddress ip(const char* text) { return *IpAddress::parse(text); }

DynamicPortRequest dyn(std::string name, uint16_t count = 1,
                       PortProtocol protocol = PortProtocol::kTcp, uint16_t containerPort = 8080) {
  return {std::move(name), containerPort, count, protocol};
}

StaticPortClaim claim(uint16_t hostPort, PortProtocol protocol = PortProtocol::kTcp,
                      std::optional<IpAddress> hostIp = std::nullopt) {
  return {hostPort, 80, protocol, std::move(hostIp)};
}

class AllocatorTest : public ::testing::Test {
 protected:
  static Allocator make(std::vector<PoolSpec> pools, uint64_t seed = 1) {
    auto allocator = Allocator::create(std::move(pools),
                                       [rng = std::mt19937_64(seed)]() mutable { return rng(); });
    EXPECT_OK(allocator);
    return std::move(*allocator);
  }
  static Allocator make(Strategy strategy, PortRange range = {30000, 30099},
                        uint32_t reuseDelaySeconds = kDefaultReuseDelaySeconds) {
    return make({PoolSpec{"default", {range}, {}, strategy, reuseDelaySeconds}});
  }

  static AllocationRequest request(std::string id, std::vector<DynamicPortRequest> dynamics,
                                   std::vector<StaticPortClaim> statics = {},
                                   std::optional<PodIdentity> pod = std::nullopt) {
    // Each attachment is its own pod unless told otherwise, so sticky ports stay out of the way.
    AllocationRequest out;
    out.pod = pod ? *pod : PodIdentity{"ns", id, ""};
    out.key = {std::move(id), "eth0"};
    out.netns = "/var/run/netns/test";
    out.dynamics = std::move(dynamics);
    out.statics = std::move(statics);
    return out;
  }

  // The host port of the first grant of a successful allocation.
  uint16_t grab(Allocator& allocator, std::string id, DynamicPortRequest row = dyn("p"),
                std::optional<PodIdentity> pod = std::nullopt) {
    auto lease =
        allocator.allocate(request(std::move(id), {std::move(row)}, {}, std::move(pod)), probe_);
    EXPECT_OK(lease);
    return lease ? lease->ports.at(0).hostPort : 0;
  }

  static const PoolUsage& usageOf(const std::vector<PoolUsage>& usage, std::string_view name) {
    for (const auto& pool : usage) {
      if (pool.name == name) return pool;
    }
    ADD_FAILURE() << "no pool " << name;
    return usage.front();
  }

  static bool mentions(const Error& error, std::string_view text) {
    return error.message.find(text) != std::string::npos;
  }

  FakePortProbe probe_;
};

// --- pools ---

TEST_F(AllocatorTest, AHostNetworkPodsRequestNamesNoContainerPortAndForwardsNowhere) {
  auto allocator = make(Strategy::kLowest);
  // A hostNetwork pod's block of 4 (hostport.io/ports "rtp*4/udp"): no container port, no
  // forwarding; its process binds the host ports itself.
  auto lease = allocator.allocate(request("relay", {dyn("rtp", 4, PortProtocol::kUdp, 0)}), probe_);
  ASSERT_TRUE(lease) << lease.error().message;
  ASSERT_EQ(lease->ports.size(), 1u);
  EXPECT_EQ(lease->ports[0].containerPort, 0);
  EXPECT_EQ(lease->ports[0].count, 4);
  EXPECT_FALSE(lease->forwarding.has_value());
}

TEST_F(AllocatorTest, ReportsPoolSizesAndUsage) {
  auto allocator = make({{"default", {{30000, 30099}}, {}, Strategy::kLowest},
                         {"games", {{40000, 40009}, {41000, 41004}}, {}, Strategy::kRandom}});
  ASSERT_EQ(allocator.usage().size(), 2u);
  EXPECT_EQ(usageOf(allocator.usage(), "default").size, 100u);
  EXPECT_EQ(usageOf(allocator.usage(), "games").size, 15u);
  grab(allocator, "a", dyn("rtp", 4));
  EXPECT_EQ(usageOf(allocator.usage(), "default").used, 4u);
  EXPECT_EQ(allocator.pools().size(), 2u);
  EXPECT_EQ(allocator.pools()[1].name, "games");
}

TEST_F(AllocatorTest, RejectsRangesOverlappingAcrossPoolsNamingBoth) {
  auto allocator = Allocator::create({{"a", {{30000, 30010}}, {}, Strategy::kLowest},
                                      {"b", {{30005, 30020}}, {}, Strategy::kLowest}},
                                     nullptr);
  ASSERT_FALSE(allocator);
  EXPECT_EQ(allocator.error().code, ErrorCode::kInvalidArgument);
  EXPECT_EQ(allocator.error().message,
            "pool \"b\" range 30005-30020 overlaps pool \"a\" range 30000-30010");
}

TEST_F(AllocatorTest, RejectsRangesOverlappingInsideOnePool) {
  auto allocator =
      Allocator::create({{"a", {{100, 200}, {150, 160}}, {}, Strategy::kLowest}}, nullptr);
  ASSERT_FALSE(allocator);
  EXPECT_TRUE(mentions(allocator.error(), "range 150-160 overlaps pool \"a\" range 100-200"));
}

TEST_F(AllocatorTest, RejectsDuplicatePoolNames) {
  auto allocator = Allocator::create(
      {{"a", {{100, 200}}, {}, Strategy::kLowest}, {"a", {{300, 400}}, {}, Strategy::kLowest}},
      nullptr);
  ASSERT_FALSE(allocator);
  EXPECT_EQ(allocator.error().message, "duplicate pool name \"a\"");
}

TEST_F(AllocatorTest, RejectsEmptyRangesNamingThePool) {
  for (const PortRange range : {PortRange{200, 100}, PortRange{0, 10}}) {
    auto allocator = Allocator::create({{"odd", {range}, {}, Strategy::kLowest}}, nullptr);
    ASSERT_FALSE(allocator);
    EXPECT_TRUE(mentions(allocator.error(), "pool \"odd\"")) << allocator.error().message;
    EXPECT_TRUE(mentions(allocator.error(), std::to_string(range.first)));
  }
  auto none = Allocator::create({{"bare", {}, {}, Strategy::kLowest}}, nullptr);
  ASSERT_FALSE(none);
  EXPECT_EQ(none.error().message, "pool \"bare\" has no port range");
}

// --- strategies ---

TEST_F(AllocatorTest, LowestPicksTheLowestFreePort) {
  // No quarantine, so a released port is the lowest free one at once (quarantine_test.cc).
  auto allocator = make(Strategy::kLowest, {30000, 30099}, /*reuseDelaySeconds=*/0);
  EXPECT_EQ(grab(allocator, "a"), 30000);
  EXPECT_EQ(grab(allocator, "b"), 30001);
  EXPECT_EQ(grab(allocator, "c"), 30002);
  allocator.release({"b", "eth0"});
  EXPECT_EQ(grab(allocator, "d"), 30001);
  EXPECT_EQ(grab(allocator, "e"), 30003);
}

TEST_F(AllocatorTest, RoundRobinDoesNotReuseAJustReleasedPortUntilOthersAreUsed) {
  auto allocator = make(Strategy::kRoundRobin, {30000, 30003});
  EXPECT_EQ(grab(allocator, "a"), 30000);
  EXPECT_EQ(grab(allocator, "b"), 30001);
  allocator.release({"a", "eth0"});
  allocator.release({"b", "eth0"});
  EXPECT_EQ(grab(allocator, "c"), 30002);
  EXPECT_EQ(grab(allocator, "d"), 30003);
  EXPECT_EQ(grab(allocator, "e"), 30000);  // released first, so least recent
  allocator.release({"d", "eth0"});
  EXPECT_EQ(grab(allocator, "f"), 30001);
  EXPECT_EQ(grab(allocator, "g"), 30003);
}

TEST_F(AllocatorTest, RandomIsDeterministicWithASeededSourceAndSpreads) {
  const auto run = [&](uint64_t seed) {
    auto allocator = make({{"default", {{30000, 30999}}, {}, Strategy::kRandom}}, seed);
    std::vector<uint16_t> ports;
    for (int i = 0; i < 30; ++i) ports.push_back(grab(allocator, "p" + std::to_string(i)));
    return ports;
  };
  const auto ports = run(99);
  EXPECT_EQ(ports, run(99));
  EXPECT_NE(ports, run(100));
  const auto [low, high] = std::ranges::minmax(ports);
  EXPECT_GE(low, 30000);
  EXPECT_LE(high, 30999);
  EXPECT_GT(high - low, 500);  // not a lowest-free sequence in disguise
  EXPECT_EQ(std::set(ports.begin(), ports.end()).size(), ports.size());
}

TEST_F(AllocatorTest, RandomKeepsWorkingAfterTheAllocatorIsMoved) {
  auto first = make({{"default", {{30000, 30999}}, {}, Strategy::kRandom}}, 5);
  Allocator moved = std::move(first);
  const uint16_t port = grab(moved, "a");
  EXPECT_GE(port, 30000);
  EXPECT_LE(port, 30999);
}

// --- ranges and protocols ---

TEST_F(AllocatorTest, GrantsContiguousPortsForACountedRequest) {
  auto allocator = make(Strategy::kLowest);
  grab(allocator, "a");
  auto lease =
      allocator.allocate(request("b", {dyn("rtp", 10, PortProtocol::kUdp, 20000)}), probe_);
  ASSERT_OK(lease);
  ASSERT_EQ(lease->ports.size(), 1u);
  const PortGrant& grant = lease->ports[0];
  EXPECT_EQ(grant.hostPort, 30001);
  EXPECT_EQ(grant.count, 10);
  EXPECT_EQ(grant.containerPort, 20000);
  EXPECT_EQ(grant.name, "rtp");
  EXPECT_FALSE(grant.isStatic);
  EXPECT_EQ(grab(allocator, "c"), 30011);
}

TEST_F(AllocatorTest, NeverSpansARangeBoundaryWithOneRequest) {
  auto allocator = make({{"default", {{100, 103}, {104, 107}, {200, 209}}, {}, Strategy::kLowest}});
  grab(allocator, "a");  // 100
  // 101-104 are consecutive numbers, but 104 is in another range.
  auto lease = allocator.allocate(request("b", {dyn("x", 4)}), probe_);
  ASSERT_TRUE(lease);
  EXPECT_EQ(lease->ports[0].hostPort, 104);
  EXPECT_EQ(grab(allocator, "c", dyn("y", 5)), 200);
}

TEST_F(AllocatorTest, HoldsADynamicNumberForEveryProtocol) {
  auto allocator = make(Strategy::kLowest);
  EXPECT_EQ(grab(allocator, "a", dyn("x", 1, PortProtocol::kTcp)), 30000);
  EXPECT_EQ(grab(allocator, "b", dyn("y", 1, PortProtocol::kUdp)), 30001);
  auto udp = allocator.allocate(request("c", {}, {claim(30000, PortProtocol::kUdp)}), probe_);
  ASSERT_FALSE(udp);
  EXPECT_EQ(udp.error().code, ErrorCode::kConflict);
  EXPECT_TRUE(mentions(udp.error(), "udp/30000"));
  EXPECT_TRUE(mentions(udp.error(), "\"a/eth0\""));
}

TEST_F(AllocatorTest, ProbesBothProtocolsForTcpUdp) {
  auto allocator = make(Strategy::kLowest);
  probe_.bind(Protocol::kUdp, 30000);
  auto lease = allocator.allocate(request("a", {dyn("game", 1, PortProtocol::kTcpUdp)}), probe_);
  ASSERT_TRUE(lease);
  EXPECT_EQ(lease->ports[0].hostPort, 30001);
  EXPECT_EQ(lease->ports[0].protocol, PortProtocol::kTcpUdp);
  // A tcp request needs only tcp free on the host.
  EXPECT_EQ(grab(allocator, "b", dyn("web", 1, PortProtocol::kTcp)), 30000);
}

TEST_F(AllocatorTest, RefusesProtocolsThePoolDoesNotAllow) {
  auto allocator = make({{"default", {{30000, 30099}}, {PortProtocol::kUdp}, Strategy::kLowest}});
  for (const auto protocol : {PortProtocol::kTcp, PortProtocol::kTcpUdp, PortProtocol::kSctp}) {
    auto lease = allocator.allocate(request("a", {dyn("x", 1, protocol)}), probe_);
    ASSERT_FALSE(lease);
    EXPECT_EQ(lease.error().code, ErrorCode::kInvalidArgument);
    EXPECT_TRUE(mentions(lease.error(), "pool \"default\" allows only udp"))
        << lease.error().message;
  }
  EXPECT_TRUE(allocator.allocate(request("a", {dyn("x", 1, PortProtocol::kUdp)}), probe_));
  auto both = make({{"default", {{1, 9}}, {PortProtocol::kTcp, PortProtocol::kUdp}, {}}});
  EXPECT_TRUE(both.allocate(request("a", {dyn("x", 1, PortProtocol::kTcpUdp)}), probe_));
}

// --- static claims ---

TEST_F(AllocatorTest, SharesAStaticNumberAcrossProtocols) {
  auto allocator = make(Strategy::kLowest);
  EXPECT_TRUE(allocator.allocate(request("a", {}, {claim(53, PortProtocol::kTcp)}), probe_));
  EXPECT_TRUE(allocator.allocate(request("b", {}, {claim(53, PortProtocol::kUdp)}), probe_));
  auto third = allocator.allocate(
      request("c", {}, {claim(53, PortProtocol::kTcp)}, PodIdentity{"dns", "other", ""}), probe_);
  ASSERT_FALSE(third);
  EXPECT_EQ(third.error().code, ErrorCode::kConflict);
  EXPECT_EQ(third.error().message, "port tcp/53 is held by attachment \"a/eth0\" (pod \"ns/a\")");
  auto both = allocator.allocate(request("d", {}, {claim(53, PortProtocol::kTcpUdp)}), probe_);
  ASSERT_FALSE(both);
  EXPECT_TRUE(mentions(both.error(), "\"a/eth0\""));
}

TEST_F(AllocatorTest, OverlapsStaticClaimsOnlyOnTheSameOrAnyAddress) {
  auto allocator = make(Strategy::kLowest);
  EXPECT_TRUE(allocator.allocate(request("a", {}, {claim(80, {}, ip("10.0.0.1"))}), probe_));
  EXPECT_TRUE(allocator.allocate(request("b", {}, {claim(80, {}, ip("10.0.0.2"))}), probe_));
  EXPECT_TRUE(allocator.allocate(request("c", {}, {claim(80, {}, ip("fd00::1"))}), probe_));
  for (const auto& hostIp :
       {std::optional<IpAddress>{}, std::optional(ip("0.0.0.0")), std::optional(ip("10.0.0.2"))}) {
    auto clash = allocator.allocate(request("d", {}, {claim(80, {}, hostIp)}), probe_);
    ASSERT_FALSE(clash);
    EXPECT_EQ(clash.error().code, ErrorCode::kConflict);
  }
  // Every address, once held, overlaps any specific one.
  EXPECT_TRUE(allocator.allocate(request("e", {}, {claim(443)}), probe_));
  EXPECT_FALSE(allocator.allocate(request("f", {}, {claim(443, {}, ip("10.0.0.1"))}), probe_));
  EXPECT_FALSE(allocator.allocate(request("g", {}, {claim(443, {}, ip("::"))}), probe_));
}

TEST_F(AllocatorTest, ARefusedStaticClaimCarriesTheLeaseHoldingIt) {
  auto allocator = make(Strategy::kLowest);
  ASSERT_OK(allocator.allocate(request("a", {}, {claim(80, {}, ip("10.0.0.1"))}), probe_));
  ASSERT_OK(allocator.allocate(request("b", {}, {claim(53, PortProtocol::kUdp)}), probe_));
  const uint16_t dynamic = grab(allocator, "c");

  // The holder of what `claimed` asks for, as the refusal names it; "" when it is granted.
  const auto holderOf = [&](StaticPortClaim claimed) -> std::string {
    auto lease = allocator.allocate(request("z", {}, {std::move(claimed)}), probe_);
    if (lease) {
      allocator.release({"z", "eth0"});
      return "";
    }
    EXPECT_EQ(lease.error().code, ErrorCode::kConflict);
    const auto& conflict = lease.error().conflict;
    if (!conflict || !conflict->lease) {
      ADD_FAILURE() << "no holding lease in: " << lease.error().message;
      return "?";
    }
    EXPECT_EQ(conflict->host.pid, 0u);
    return describePort(conflict->protocol, conflict->port) + " " +
           conflict->lease->key.containerId;
  };
  EXPECT_EQ(holderOf(claim(80, {}, ip("10.0.0.1"))), "tcp/80 a");
  EXPECT_EQ(holderOf(claim(80)), "tcp/80 a");
  EXPECT_EQ(holderOf(claim(80, {}, ip("0.0.0.0"))), "tcp/80 a");
  EXPECT_EQ(holderOf(claim(80, {}, ip("10.0.0.2"))), "");
  EXPECT_EQ(holderOf(claim(80, PortProtocol::kUdp)), "");
  // The first of a claim's kernel protocols that a lease holds.
  EXPECT_EQ(holderOf(claim(80, PortProtocol::kTcpUdp)), "tcp/80 a");

  EXPECT_EQ(holderOf(claim(53, PortProtocol::kUdp)), "udp/53 b");
  EXPECT_EQ(holderOf(claim(53)), "");
  EXPECT_EQ(holderOf(claim(53, PortProtocol::kTcpUdp)), "udp/53 b");
  // A dynamic grant holds its number in every protocol.
  EXPECT_EQ(holderOf(claim(dynamic, PortProtocol::kSctp)),
            "sctp/" + std::to_string(dynamic) + " c");
  EXPECT_EQ(holderOf(claim(8080)), "");
}

TEST_F(AllocatorTest, ARefusedStaticClaimCarriesTheHostProcessHoldingIt) {
  auto allocator = make(Strategy::kLowest);
  probe_.bind(Protocol::kUdp, 80, {1234, "dnsmasq"});
  auto lease = allocator.allocate(request("a", {}, {claim(80, PortProtocol::kTcpUdp)}), probe_);
  ASSERT_FALSE(lease);
  ASSERT_TRUE(lease.error().conflict.has_value());
  const Conflict& conflict = *lease.error().conflict;
  EXPECT_EQ(conflict.protocol, Protocol::kUdp);
  EXPECT_EQ(conflict.port, 80);
  EXPECT_FALSE(conflict.lease.has_value());
  EXPECT_EQ(conflict.host.pid, 1234u);
  EXPECT_EQ(conflict.host.command, "dnsmasq");

  probe_.bind(Protocol::kTcp, 81);  // nothing known about its owner
  auto unknown = allocator.allocate(request("b", {}, {claim(81)}), probe_);
  ASSERT_FALSE(unknown);
  ASSERT_TRUE(unknown.error().conflict.has_value());
  EXPECT_FALSE(unknown.error().conflict->lease.has_value());
  EXPECT_EQ(unknown.error().conflict->host.pid, 0u);
  EXPECT_EQ(unknown.error().conflict->host.command, "");
}

TEST_F(AllocatorTest, OnlyAStaticClaimsConflictCarriesAHolder) {
  auto allocator = make(Strategy::kLowest, {30000, 30000});
  grab(allocator, "a");
  auto exhausted = allocator.allocate(request("b", {dyn("p")}), probe_);
  ASSERT_FALSE(exhausted);
  EXPECT_EQ(exhausted.error().code, ErrorCode::kExhausted);
  EXPECT_FALSE(exhausted.error().conflict.has_value());
}

TEST_F(AllocatorTest, NamesTheHostProcessHoldingAStaticClaim) {
  auto allocator = make(Strategy::kLowest);
  probe_.bind(Protocol::kTcp, 80, {1234, "nginx"});
  auto lease = allocator.allocate(request("a", {}, {claim(80)}), probe_);
  ASSERT_FALSE(lease);
  EXPECT_EQ(lease.error().code, ErrorCode::kConflict);
  EXPECT_EQ(lease.error().message, "port tcp/80 is in use on the host by pid 1234 (\"nginx\")");
  EXPECT_EQ(allocator.hostConflicts(), 1u);

  probe_.bind(Protocol::kUdp, 81);
  auto unknown = allocator.allocate(request("b", {}, {claim(81, PortProtocol::kTcpUdp)}), probe_);
  ASSERT_FALSE(unknown);
  EXPECT_EQ(unknown.error().message, "port udp/81 is in use on the host");

  probe_.bind(Protocol::kTcp, 82, {7, "evil\n\"name\""});
  auto hostile = allocator.allocate(request("c", {}, {claim(82)}), probe_);
  ASSERT_FALSE(hostile);
  EXPECT_EQ(hostile.error().message,
            "port tcp/82 is in use on the host by pid 7 (\"evil\\n\\\"name\\\"\")");
}

TEST_F(AllocatorTest, RecordsStaticClaimsOutsideEveryPool) {
  auto allocator = make(Strategy::kLowest);
  auto lease = allocator.allocate(request("a", {}, {claim(8443, {}, ip("10.0.0.1"))}), probe_);
  ASSERT_TRUE(lease);
  ASSERT_EQ(lease->ports.size(), 1u);
  EXPECT_TRUE(lease->ports[0].isStatic);
  EXPECT_EQ(lease->ports[0].hostIp, ip("10.0.0.1"));
  EXPECT_EQ(usageOf(allocator.usage(), "default").used, 0u);
  EXPECT_FALSE(allocator.allocate(request("b", {}, {claim(8443)}), probe_));
}

TEST_F(AllocatorTest, KeepsDynamicPortsOffStaticClaimsInsideThePool) {
  auto allocator = make(Strategy::kLowest);
  ASSERT_TRUE(allocator.allocate(request("a", {}, {claim(30000, PortProtocol::kUdp)}), probe_));
  EXPECT_EQ(usageOf(allocator.usage(), "default").used, 1u);
  // The same request's own static claim is kept off too.
  auto lease = allocator.allocate(request("b", {dyn("x")}, {claim(30001)}), probe_);
  ASSERT_TRUE(lease);
  EXPECT_EQ(lease->ports.size(), 2u);
  EXPECT_EQ(lease->ports[1].hostPort, 30002);
}

TEST_F(AllocatorTest, CollapsesARepeatedStaticMapping) {
  auto allocator = make(Strategy::kLowest);
  auto lease = allocator.allocate(
      request("a", {}, {claim(80), claim(80), claim(80, {}, ip("10.0.0.1"))}), probe_);
  ASSERT_OK(lease);
  EXPECT_EQ(lease->ports.size(), 2u);
  allocator.release({"a", "eth0"});
  EXPECT_TRUE(allocator.allocate(request("b", {}, {claim(80)}), probe_));
}

// --- the host ---

TEST_F(AllocatorTest, SkipsPortsBusyOnTheHostAndCountsThem) {
  auto allocator = make(Strategy::kLowest);
  probe_.bind(Protocol::kTcp, 30000);
  probe_.bind(Protocol::kTcp, 30002);
  EXPECT_EQ(grab(allocator, "a"), 30001);
  EXPECT_EQ(grab(allocator, "b", dyn("r", 3)), 30003);
  // 30000, then 30002 as the start of 30002-30004 (30000-30002 was never probed: 30001 is held).
  EXPECT_EQ(allocator.hostConflicts(), 2u);
}

TEST_F(AllocatorTest, GivesUpAfterABoundedNumberOfHostRejections) {
  auto allocator = make(Strategy::kLowest, {20000, 29999});
  for (uint16_t port = 20000; port <= 29999; ++port) probe_.bind(Protocol::kTcp, port);
  auto lease = allocator.allocate(request("a", {dyn("x")}), probe_);
  ASSERT_FALSE(lease);
  EXPECT_EQ(lease.error().code, ErrorCode::kExhausted);
  EXPECT_TRUE(mentions(lease.error(), "1024 busy on the host")) << lease.error().message;
  EXPECT_EQ(probe_.calls(), 1024);
  EXPECT_EQ(allocator.hostConflicts(), 1024u);
}

TEST_F(AllocatorTest, TriesEveryPortWhenFewerThanTheBoundAreBusy) {
  auto allocator = make(Strategy::kRandom, {30000, 30099});
  for (uint16_t port = 30000; port <= 30099; ++port) {
    if (port != 30042) probe_.bind(Protocol::kUdp, port);
  }
  EXPECT_EQ(grab(allocator, "a", dyn("x", 1, PortProtocol::kUdp)), 30042);
}

// --- exhaustion ---

TEST_F(AllocatorTest, NamesThePoolAndItsSizeWhenExhausted) {
  auto allocator = make(Strategy::kLowest);
  for (int i = 0; i < 100; ++i) grab(allocator, "p" + std::to_string(i));
  for (const char* id : {"p10", "p50", "p90"}) allocator.release({id, "eth0"});
  auto lease = allocator.allocate(request("x", {dyn("rtp", 3)}), probe_);
  ASSERT_FALSE(lease);
  EXPECT_EQ(lease.error().code, ErrorCode::kExhausted);
  EXPECT_EQ(lease.error().message,
            "pool \"default\" has no 3 contiguous free ports (size 100, 97 in use)");
  for (int i = 0; i < 3; ++i) grab(allocator, "q" + std::to_string(i));
  auto single = allocator.allocate(request("y", {dyn("x")}), probe_);
  ASSERT_FALSE(single);
  EXPECT_EQ(single.error().message, "pool \"default\" has no free port (size 100, 100 in use)");
}

TEST_F(AllocatorTest, MentionsPortsBusyOnTheHostWhenExhausted) {
  auto allocator = make(Strategy::kLowest, {30000, 30003});
  probe_.bind(Protocol::kTcp, 30001);
  grab(allocator, "a");
  auto lease = allocator.allocate(request("b", {dyn("x", 2), dyn("y", 1)}), probe_);
  ASSERT_FALSE(lease);
  EXPECT_EQ(lease.error().message,
            "pool \"default\" has no free port (size 4, 1 in use, 2 asked by this pod, 1 busy on "
            "the host)");
}

// --- all or nothing ---

TEST_F(AllocatorTest, LeavesNoTraceWhenALaterRowFails) {
  auto allocator = make(Strategy::kRoundRobin, {30000, 30009});
  grab(allocator, "a");  // 30000
  auto failed =
      allocator.allocate(request("b", {dyn("x"), dyn("y", 1), dyn("z", 9)}, {claim(80)}), probe_);
  ASSERT_FALSE(failed);
  EXPECT_EQ(failed.error().code, ErrorCode::kExhausted);
  EXPECT_EQ(allocator.leaseCount(), 1u);
  EXPECT_FALSE(allocator.find({"b", "eth0"}));
  EXPECT_EQ(usageOf(allocator.usage(), "default").used, 1u);
  // Neither the static claim, nor the ports the first rows had picked, nor the order moved.
  EXPECT_TRUE(allocator.allocate(request("c", {}, {claim(80)}), probe_));
  EXPECT_EQ(grab(allocator, "d"), 30001);
  EXPECT_EQ(grab(allocator, "e"), 30002);
}

TEST_F(AllocatorTest, LeavesNoTraceWhenAStaticClaimFails) {
  auto allocator = make(Strategy::kLowest);
  probe_.bind(Protocol::kTcp, 81);
  auto failed = allocator.allocate(request("a", {dyn("x")}, {claim(80), claim(81)}), probe_);
  ASSERT_FALSE(failed);
  EXPECT_EQ(allocator.leaseCount(), 0u);
  EXPECT_TRUE(allocator.allocate(request("b", {}, {claim(80)}), probe_));
  EXPECT_EQ(grab(allocator, "c"), 30000);
}

// --- the request ---

TEST_F(AllocatorTest, ReturnsSameLeaseWhenAddIsRepeated) {
  auto allocator = make(Strategy::kLowest);
  auto first = allocator.allocate(request("a", {dyn("x")}, {claim(80)}), probe_);
  ASSERT_TRUE(first);
  const int calls = probe_.calls();
  auto again = allocator.allocate(request("a", {dyn("other", 5)}), probe_);
  ASSERT_TRUE(again);
  EXPECT_EQ(*again, *first);
  EXPECT_EQ(probe_.calls(), calls);
  EXPECT_EQ(allocator.leaseCount(), 1u);
}

TEST_F(AllocatorTest, RejectsRequestsOutsideTheBounds) {
  auto allocator = make({{"default", {{30000, 30009}, {31000, 31019}}, {}, Strategy::kLowest}});
  const auto invalid = [&](AllocationRequest req, std::string_view text) {
    auto lease = allocator.allocate(req, probe_);
    ASSERT_FALSE(lease) << text;
    EXPECT_EQ(lease.error().code, ErrorCode::kInvalidArgument);
    EXPECT_TRUE(mentions(lease.error(), text)) << lease.error().message;
  };
  invalid(request("a", std::vector<DynamicPortRequest>(kMaxPortsPerRequest + 1, dyn("x"))),
          "too many ports: 257");
  invalid(request("a", {dyn("x", 0)}), "asks for 0 ports");
  invalid(request("a", {dyn("x", kMaxRangeWidth + 1)}), "asks for 1025 ports (1-1024)");
  invalid(request("a", {dyn("x", 21)}), "the widest range of pool \"default\" has 20");
  invalid(request("a", {dyn("x", 10, PortProtocol::kTcp, 65530)}), "container ports outside");
  auto forwarded = request("a", {dyn("x", 1, PortProtocol::kTcp, 0)});
  forwarded.forwarding = Forwarding{.network = "net"};
  invalid(forwarded, "container ports outside");  // a forward needs a port to go to
  invalid(request("a", {}, {claim(0)}), "needs ports in 1-65535");
  auto pool = request("a", {dyn("x")});
  pool.pool = "gold";
  invalid(pool, "unknown pool \"gold\"");
  EXPECT_EQ(allocator.leaseCount(), 0u);
  EXPECT_EQ(probe_.calls(), 0);
  // The widest allowed request fits exactly.
  EXPECT_TRUE(allocator.allocate(request("b", {dyn("x", 20, PortProtocol::kTcp, 65516)}), probe_));
}

TEST_F(AllocatorTest, UsesTheNamedPool) {
  auto allocator = make({{"default", {{30000, 30099}}, {}, Strategy::kLowest},
                         {"games", {{40000, 40009}}, {}, Strategy::kLowest}});
  auto req = request("a", {dyn("x")});
  req.pool = "games";
  auto lease = allocator.allocate(req, probe_);
  ASSERT_TRUE(lease);
  EXPECT_EQ(lease->pool, "games");
  EXPECT_EQ(lease->ports[0].hostPort, 40000);
  EXPECT_EQ(grab(allocator, "b"), 30000);
  EXPECT_EQ(allocator.find({"b", "eth0"})->pool, "default");
}

// --- sticky ---

TEST_F(AllocatorTest, GivesAReturningPodItsPreviousPort) {
  auto allocator = make(Strategy::kRoundRobin);
  const PodIdentity pod{"db", "pg-0", "uid-1"};
  EXPECT_EQ(grab(allocator, "a", dyn("sql"), pod), 30000);
  allocator.release({"a", "eth0"});
  // Round-robin alone would give 30001; the same pod gets 30000 back, under a new attachment.
  EXPECT_EQ(grab(allocator, "b", dyn("sql"), PodIdentity{"db", "pg-0", "uid-2"}), 30000);
  allocator.release({"b", "eth0"});
  EXPECT_EQ(grab(allocator, "c", dyn("sql"), PodIdentity{"db", "pg-1", ""}), 30001);
  EXPECT_EQ(grab(allocator, "d", dyn("web"), pod), 30002);  // another name
}

TEST_F(AllocatorTest, FallsBackWhenThePreviousPortIsTaken) {
  auto allocator = make(Strategy::kRoundRobin);
  const PodIdentity pod{"db", "pg-0", ""};
  EXPECT_EQ(grab(allocator, "a", dyn("sql", 2), pod), 30000);
  allocator.release({"a", "eth0"});
  ASSERT_TRUE(allocator.allocate(request("x", {}, {claim(30001)}), probe_));
  EXPECT_EQ(grab(allocator, "b", dyn("sql", 2), pod), 30002);
  allocator.release({"b", "eth0"});
  probe_.bind(Protocol::kTcp, 30003);
  EXPECT_EQ(grab(allocator, "c", dyn("sql", 2), pod), 30004);
  EXPECT_EQ(allocator.hostConflicts(), 1u);  // 30003 in the sticky run; the walk avoids it
}

// --- release and restore ---

TEST_F(AllocatorTest, ReleaseReturnsTheLeaseAndFreesEveryPort) {
  // No quarantine, so the freed ports are the lowest free ones at once (quarantine_test.cc).
  auto allocator = make(Strategy::kLowest, {30000, 30099}, /*reuseDelaySeconds=*/0);
  auto lease =
      allocator.allocate(request("a", {dyn("x", 3)}, {claim(80, PortProtocol::kTcpUdp)}), probe_);
  ASSERT_TRUE(lease);
  auto released = allocator.release({"a", "eth0"});
  ASSERT_TRUE(released);
  EXPECT_EQ(*released, *lease);
  EXPECT_FALSE(allocator.release({"a", "eth0"}));
  EXPECT_EQ(allocator.leaseCount(), 0u);
  EXPECT_EQ(usageOf(allocator.usage(), "default").used, 0u);
  EXPECT_TRUE(allocator.allocate(request("b", {}, {claim(80, PortProtocol::kTcpUdp)}), probe_));
  EXPECT_EQ(grab(allocator, "c", dyn("x", 3)), 30000);
}

TEST_F(AllocatorTest, ListsLeasesInKeyOrder) {
  auto allocator = make(Strategy::kLowest);
  for (const char* id : {"c", "a", "b"}) grab(allocator, id);
  std::vector<std::string> ids;
  for (const Lease& lease : allocator.leases()) ids.push_back(lease.key.containerId);
  EXPECT_EQ(ids, (std::vector<std::string>{"a", "b", "c"}));
  EXPECT_EQ(allocator.find({"b", "eth0"})->ports[0].hostPort, 30002);
  EXPECT_FALSE(allocator.find({"b", "eth1"}));
}

TEST_F(AllocatorTest, ListsLeasesInKeyOrderWhenIdsShareLongPrefixes) {
  auto allocator = make(Strategy::kLowest, {30000, 30999});
  // Container IDs alike in their first bytes, prefixes of one another, hex and not, with a NUL;
  // each under two ifnames.
  const std::vector<std::string> ids = {"0123456789abcdef01",
                                        "0123456789abcdef",
                                        "0123456789abcdef00",
                                        "0123456789ABCDEF",
                                        "0123456789abcdef0",
                                        "01234567",
                                        "0123456",
                                        "012345678",
                                        std::string("01234567\0", 9),
                                        "ffffffffffffffff",
                                        "fffffffffffffffe"};
  std::set<AttachmentKey> expected;
  for (const auto& id : ids) {
    for (const char* ifname : {"net1", "eth0"}) {
      AllocationRequest req = request(id, {dyn("p")});
      req.key.ifname = ifname;
      ASSERT_TRUE(allocator.allocate(req, probe_));
      expected.insert(req.key);
    }
  }
  std::vector<AttachmentKey> listed;
  for (const Lease& lease : allocator.leases()) listed.push_back(lease.key);
  EXPECT_EQ(listed, std::vector<AttachmentKey>(expected.begin(), expected.end()));
  std::vector<AttachmentKey> visited;
  allocator.forEachLease([&](const Lease& lease) { visited.push_back(lease.key); });
  EXPECT_EQ(visited, listed);
}

TEST_F(AllocatorTest, KeepsLeasesWithAnyTextExactlyAsGiven) {
  auto allocator = make(Strategy::kLowest);
  const std::vector<std::string> texts = {std::string(64, 'a'),
                                          std::string(63, 'a'),
                                          "ABCDEF",
                                          "3f2a9c1e-0b7d-4e21-8f00-5a6b7c8d9e0f",
                                          std::string("a\0-/\xff", 5),
                                          std::string(4096, '-')};
  std::vector<Lease> granted;
  for (const auto& text : texts) {
    AllocationRequest req = request(
        text, {dyn(text)},
        {claim(static_cast<uint16_t>(100 + granted.size()), PortProtocol::kUdp, ip("fd00::1"))},
        PodIdentity{text, text, text});
    req.key.ifname = text;
    req.netns = "/var/run/netns/" + text;
    auto lease = allocator.allocate(req, probe_);
    ASSERT_OK(lease);
    EXPECT_EQ(lease->key, req.key);
    EXPECT_EQ(lease->pod, req.pod);
    EXPECT_EQ(lease->netns, req.netns);
    EXPECT_EQ(lease->ports[0].hostIp, ip("fd00::1"));
    EXPECT_EQ(allocator.find(req.key), *lease);
    granted.push_back(*lease);
  }
  for (const auto& lease : granted) {
    EXPECT_EQ(allocator.release(lease.key), lease);
    EXPECT_FALSE(allocator.find(lease.key));
  }
  EXPECT_EQ(allocator.leaseCount(), 0u);
}

TEST_F(AllocatorTest, TellsKeysApartWhereTheIdEndsAndTheIfnameStarts) {
  auto allocator = make(Strategy::kLowest);
  AllocationRequest first = request("ab", {dyn("p")});
  first.key.ifname = "c";
  AllocationRequest second = request("a", {dyn("p")});
  second.key.ifname = "bc";
  EXPECT_EQ(allocator.allocate(first, probe_)->ports[0].hostPort, 30000);
  EXPECT_EQ(allocator.allocate(second, probe_)->ports[0].hostPort, 30001);
  EXPECT_EQ(allocator.leaseCount(), 2u);
  EXPECT_EQ(allocator.release(second.key)->key, second.key);
  EXPECT_EQ(allocator.find(first.key)->ports[0].hostPort, 30000);
}

Lease storedLease(std::string id, std::vector<PortGrant> ports, std::string pool = "default") {
  Lease lease;
  lease.key = {std::move(id), "eth0"};
  lease.pod = {"ns", "pod", ""};
  lease.netns = "/netns";
  lease.pool = std::move(pool);
  lease.ports = std::move(ports);
  return lease;
}

PortGrant dynamicGrant(uint16_t hostPort, uint16_t count = 1,
                       PortProtocol protocol = PortProtocol::kTcp) {
  return {"x", protocol, hostPort, 8080, count, std::nullopt, false};
}

PortGrant staticGrant(uint16_t hostPort, PortProtocol protocol = PortProtocol::kTcp) {
  return {"", protocol, hostPort, 80, 1, std::nullopt, true};
}

TEST_F(AllocatorTest, RestoresLeasesWithoutProbingTheHost) {
  auto allocator = make(Strategy::kLowest);
  ASSERT_TRUE(allocator.restore(storedLease("a", {dynamicGrant(30000, 2), staticGrant(80)})));
  ASSERT_TRUE(allocator.restore(storedLease("b", {dynamicGrant(30005)})));
  EXPECT_EQ(probe_.calls(), 0);
  EXPECT_EQ(allocator.leaseCount(), 2u);
  EXPECT_EQ(usageOf(allocator.usage(), "default").used, 3u);
  EXPECT_EQ(grab(allocator, "c", dyn("x", 3)), 30002);
  EXPECT_EQ(grab(allocator, "d"), 30006);
  EXPECT_FALSE(allocator.allocate(request("e", {}, {claim(80)}), probe_));
}

TEST_F(AllocatorTest, RefusesRestoringOverlappingLeases) {
  auto allocator = make(Strategy::kLowest);
  ASSERT_TRUE(allocator.restore(storedLease("a", {dynamicGrant(30000, 2), staticGrant(53)})));
  const auto conflict = [&](Lease lease) {
    auto restored = allocator.restore(std::move(lease));
    ASSERT_FALSE(restored);
    EXPECT_EQ(restored.error().code, ErrorCode::kConflict);
  };
  conflict(storedLease("b", {dynamicGrant(30001)}));
  conflict(storedLease("b", {staticGrant(30001, PortProtocol::kUdp)}));
  conflict(storedLease("b", {staticGrant(53, PortProtocol::kTcpUdp)}));
  conflict(storedLease("b", {dynamicGrant(53)}));
  conflict(storedLease("b", {dynamicGrant(30010, 2), dynamicGrant(30011)}));
  conflict(storedLease("b", {dynamicGrant(30010), staticGrant(30010)}));
  conflict(storedLease("a", {dynamicGrant(30050)}));
  EXPECT_EQ(allocator.leaseCount(), 1u);
  EXPECT_EQ(usageOf(allocator.usage(), "default").used, 2u);
  // None of the refused leases left a mark.
  EXPECT_TRUE(allocator.restore(
      storedLease("b", {dynamicGrant(30010, 2), staticGrant(53, PortProtocol::kUdp)})));
  auto message = allocator.restore(storedLease("c", {dynamicGrant(30001)}));
  ASSERT_FALSE(message);
  EXPECT_EQ(
      message.error().message,
      "restoring \"c/eth0\": port tcp/30001 is held by attachment \"a/eth0\" (pod \"ns/pod\")");
}

TEST_F(AllocatorTest, RefusesRestoringIntoAnUnknownPoolOrMalformedGrants) {
  auto allocator = make(Strategy::kLowest);
  auto unknown = allocator.restore(storedLease("a", {dynamicGrant(30000)}, "gone"));
  ASSERT_FALSE(unknown);
  EXPECT_EQ(unknown.error().code, ErrorCode::kInvalidArgument);
  EXPECT_TRUE(mentions(unknown.error(), "unknown pool \"gone\""));
  auto wrapping = allocator.restore(storedLease("a", {dynamicGrant(65535, 2)}));
  ASSERT_FALSE(wrapping);
  EXPECT_EQ(wrapping.error().code, ErrorCode::kInvalidArgument);
  EXPECT_EQ(allocator.leaseCount(), 0u);
}

TEST_F(AllocatorTest, RestoresUnderThePoolsOwnNameAndGivesBackWhatItHeld) {
  auto allocator = make(Strategy::kLowest);
  Lease unnamed = storedLease("a", {dynamicGrant(30000), staticGrant(80)}, "");
  unnamed.pod.uid = "3f2a9c1e-0b7d-4e21-8f00-5a6b7c8d9e0f";
  ASSERT_TRUE(allocator.restore(unnamed));
  Lease expected = unnamed;
  expected.pool = "default";
  EXPECT_EQ(allocator.find(unnamed.key), expected);
  // A refused restore leaves the held one as it was.
  EXPECT_FALSE(allocator.restore(storedLease("a", {dynamicGrant(30005)})));
  EXPECT_EQ(allocator.leases(), std::vector<Lease>{expected});
  EXPECT_EQ(allocator.release(unnamed.key), expected);
}

TEST_F(AllocatorTest, RemembersRestoredPodsForStickyPorts) {
  auto allocator = make(Strategy::kRoundRobin);
  ASSERT_TRUE(allocator.restore(storedLease("a", {dynamicGrant(30050)})));
  allocator.release({"a", "eth0"});
  EXPECT_EQ(grab(allocator, "b", dyn("x"), PodIdentity{"ns", "pod", ""}), 30050);
}

}  // namespace
}  // namespace hostport::agent::core
