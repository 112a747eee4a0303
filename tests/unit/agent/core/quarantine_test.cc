#include "agent/core/quarantine.h"

#include <gtest/gtest.h>

#include <random>
#include <set>

#include "agent/core/allocator.h"
#include "tests/fakes/fake_port_probe.h"
#include "tests/support/result_assertions.h"

namespace hostport::agent::core {
namespace {

using std::chrono::seconds;

constexpr Strategy kStrategies[] = {Strategy::kLowest, Strategy::kRandom, Strategy::kRoundRobin};

std::vector<uint16_t> drain(CandidateStream& stream) {
  std::vector<uint16_t> out;
  while (const auto next = stream.next()) out.push_back(*next);
  return out;
}

class QuarantineTest : public ::testing::Test {
 protected:
  // The quarantine alone, over the pool 100-109 and 200-204.
  Quarantine line(seconds delay = seconds(30)) {
    return Quarantine(PoolLayout({{100, 109}, {200, 204}}), delay, marks_);
  }

  // An engine on the fake clock, one pool "default" of `range` with `strategy` and `delay`.
  Allocator make(Strategy strategy, PortRange range = {30000, 30009},
                 uint32_t delay = kDefaultReuseDelaySeconds) {
    return make({PoolSpec{"default", {range}, {}, strategy, delay}});
  }
  Allocator make(std::vector<PoolSpec> pools) {
    auto allocator = Allocator::create(
        std::move(pools), [rng = std::mt19937_64(7)]() mutable { return rng(); },
        [this] { return now_; });
    EXPECT_OK(allocator);
    return std::move(*allocator);
  }

  static AllocationRequest request(std::string id, std::vector<DynamicPortRequest> dynamics,
                                   std::vector<StaticPortClaim> statics = {},
                                   std::string pod = "") {
    AllocationRequest out;
    out.pod = {"ns", pod.empty() ? id : pod, ""};  // its own pod: sticky ports stay out of the way
    out.key = {std::move(id), "eth0"};
    out.netns = "/var/run/netns/test";
    out.dynamics = std::move(dynamics);
    out.statics = std::move(statics);
    return out;
  }

  // The first host port of a granted request of `count` ports, 0 when refused.
  uint16_t grab(Allocator& allocator, std::string id, uint16_t count = 1, std::string pod = "") {
    auto lease = allocator.allocate(
        request(std::move(id), {{"p", 8080, count, PortProtocol::kTcp}}, {}, std::move(pod)),
        probe_);
    EXPECT_OK(lease);
    return lease ? lease->ports.at(0).hostPort : 0;
  }

  static void release(Allocator& allocator, std::string id) {
    ASSERT_TRUE(allocator.release({std::move(id), "eth0"}));
  }

  static uint32_t quarantined(const Allocator& allocator, std::size_t pool = 0) {
    return allocator.usage().at(pool).quarantined;
  }

  PortBitmap marks_;
  PortBitmap held_;
  PortBitmap excluded_;
  std::chrono::steady_clock::time_point now_{seconds(1000)};
  FakePortProbe probe_;
};

// --- the line itself ---

TEST_F(QuarantineTest, KeepsPortsInReleaseOrderUntilTheirDelayIsOver) {
  Quarantine quarantine = line();
  quarantine.add(105, now_);
  quarantine.add(201, now_ + seconds(5));
  quarantine.add(100, now_ + seconds(10));
  EXPECT_EQ(quarantine.size(), 3u);
  EXPECT_TRUE(marks_.test(201));
  const FreeView view(held_, excluded_);
  EXPECT_EQ(drain(*quarantine.candidates(view)), (std::vector<uint16_t>{105, 201, 100}));

  quarantine.retire(now_ + seconds(29));
  EXPECT_EQ(quarantine.size(), 3u);
  quarantine.retire(now_ + seconds(35));  // 105 and 201 are over, 100 is not
  EXPECT_EQ(quarantine.size(), 1u);
  EXPECT_FALSE(marks_.test(105));
  EXPECT_FALSE(marks_.test(201));
  EXPECT_EQ(drain(*quarantine.candidates(view)), std::vector<uint16_t>{100});
  quarantine.retire(now_ + seconds(40));
  EXPECT_EQ(quarantine.size(), 0u);
  EXPECT_TRUE(drain(*quarantine.candidates(view)).empty());
}

TEST_F(QuarantineTest, APortTakenOutAndReleasedAgainWaitsItsOwnFullDelay) {
  Quarantine quarantine = line();
  quarantine.add(103, now_);
  quarantine.add(104, now_);
  quarantine.remove(103);  // granted while quarantined
  EXPECT_FALSE(marks_.test(103));
  EXPECT_EQ(quarantine.size(), 1u);
  quarantine.add(103, now_ + seconds(20));
  quarantine.add(103, now_ + seconds(25));  // already in: keeps its place and its delay
  quarantine.retire(now_ + seconds(30));
  EXPECT_EQ(quarantine.size(), 1u);
  EXPECT_TRUE(marks_.test(103));
  quarantine.retire(now_ + seconds(50));
  EXPECT_EQ(quarantine.size(), 0u);
  quarantine.remove(103);  // not in: nothing to do
  EXPECT_EQ(quarantine.size(), 0u);
}

TEST_F(QuarantineTest, OffersOnlyPortsFreeInTheView) {
  Quarantine quarantine = line();
  for (const uint16_t port : {102, 203, 107}) quarantine.add(port, now_);
  excluded_.set(203);
  EXPECT_EQ(drain(*quarantine.candidates(FreeView(held_, excluded_))),
            (std::vector<uint16_t>{102, 107}));
}

TEST_F(QuarantineTest, QuarantinesNothingWithoutADelayOrOutsideItsPool) {
  Quarantine off = line(seconds(0));
  EXPECT_FALSE(off.enabled());
  off.add(100, now_);
  EXPECT_EQ(off.size(), 0u);
  EXPECT_FALSE(marks_.test(100));
  EXPECT_TRUE(drain(*off.candidates(FreeView(held_, excluded_))).empty());
  Quarantine on = line();
  on.add(150, now_);
  EXPECT_EQ(on.size(), 0u);
  EXPECT_FALSE(marks_.test(150));
}

TEST_F(QuarantineTest, HidesQuarantinedPortsOnlyFromAViewGivenThem) {
  marks_.set(10);
  marks_.set(12);
  const FreeView strategy(held_, excluded_, marks_);
  const FreeView anyFree(held_, excluded_);
  EXPECT_FALSE(strategy.isFree(10));
  EXPECT_EQ(strategy.findRun(10, 20, 1), 11);
  EXPECT_EQ(strategy.findRun(10, 20, 2), 13);
  EXPECT_TRUE(anyFree.isFree(10));
  EXPECT_EQ(anyFree.findRun(10, 20, 3), 10);
}

// --- in the engine ---

TEST_F(QuarantineTest, DoesNotRegrantAReleasedPortWhileOthersAreFreeWithAnyStrategy) {
  for (const Strategy strategy : kStrategies) {
    SCOPED_TRACE(strategyName(strategy));
    Allocator allocator = make(strategy);
    const uint16_t released = grab(allocator, "a");
    release(allocator, "a");
    std::set<uint16_t> granted;
    for (int i = 0; i < 9; ++i) granted.insert(grab(allocator, "b" + std::to_string(i)));
    EXPECT_EQ(granted.size(), 9u);
    EXPECT_FALSE(granted.contains(released));
    // The last free port of the pool is the quarantined one: it is granted, not refused.
    EXPECT_EQ(grab(allocator, "last"), released);
    EXPECT_EQ(quarantined(allocator), 0u);
  }
}

TEST_F(QuarantineTest, KeepsEachStrategysOrderAmongPortsNotQuarantined) {
  Allocator lowest = make(Strategy::kLowest);
  for (const char* id : {"a", "b", "c"}) grab(lowest, id);  // 30000-30002
  release(lowest, "a");
  EXPECT_EQ(grab(lowest, "d"), 30003);  // the lowest port not quarantined
  EXPECT_EQ(grab(lowest, "e"), 30004);

  Allocator roundRobin = make(Strategy::kRoundRobin, {30000, 30009}, 0);
  Allocator quarantining = make(Strategy::kRoundRobin);
  for (Allocator* allocator : {&roundRobin, &quarantining}) {
    for (const char* id : {"a", "b"}) grab(*allocator, id);
    release(*allocator, "b");
    release(*allocator, "a");
  }
  // Round-robin already offers a released port last; quarantine changes nothing before that.
  for (int i = 0; i < 8; ++i) {
    const std::string id = "c" + std::to_string(i);
    EXPECT_EQ(grab(quarantining, id), grab(roundRobin, id));
  }
}

TEST_F(QuarantineTest, GrantsTheOldestReleasedPortFirstWhenOnlyQuarantinedPortsAreFree) {
  for (const Strategy strategy : kStrategies) {
    SCOPED_TRACE(strategyName(strategy));
    Allocator allocator = make(strategy, {30000, 30003});
    std::vector<uint16_t> ports;
    for (const char* id : {"a", "b", "c", "d"}) ports.push_back(grab(allocator, id));
    for (const char* id : {"c", "a", "d"}) {
      release(allocator, id);
      now_ += seconds(1);
    }
    EXPECT_EQ(quarantined(allocator), 3u);
    EXPECT_EQ(grab(allocator, "e"), ports[2]);
    EXPECT_EQ(grab(allocator, "f"), ports[0]);
    EXPECT_EQ(grab(allocator, "g"), ports[3]);
    EXPECT_FALSE(allocator.allocate(request("h", {{"p", 8080, 1, PortProtocol::kTcp}}), probe_));
  }
}

TEST_F(QuarantineTest, SkipsAQuarantinedPortBusyOnTheHost) {
  Allocator allocator = make(Strategy::kLowest, {30000, 30002});
  for (const char* id : {"a", "b", "c"}) grab(allocator, id);
  for (const char* id : {"a", "b"}) release(allocator, id);
  probe_.bind(Protocol::kTcp, 30000);
  EXPECT_EQ(grab(allocator, "d"), 30001);
  EXPECT_EQ(allocator.hostConflicts(), 1u);
}

TEST_F(QuarantineTest, MakesAReleasedPortEligibleAgainAfterTheDelay) {
  Allocator allocator = make(Strategy::kLowest);
  for (const char* id : {"a", "b"}) grab(allocator, id);  // 30000, 30001
  release(allocator, "a");
  now_ += seconds(29);
  EXPECT_EQ(grab(allocator, "c"), 30002);
  EXPECT_EQ(quarantined(allocator), 1u);
  now_ += seconds(1);
  EXPECT_EQ(quarantined(allocator), 0u);  // usage sees the delay over without a request
  EXPECT_EQ(grab(allocator, "d"), 30000);
}

TEST_F(QuarantineTest, UsesEachPoolsOwnDelayAndNoneWhenItIsZero) {
  Allocator allocator = make({{"default", {{30000, 30009}}, {}, Strategy::kLowest, 5},
                              {"off", {{31000, 31009}}, {}, Strategy::kLowest, 0}});
  grab(allocator, "a");
  auto other = allocator.allocate(
      [] {
        AllocationRequest out = request("b", {{"p", 8080, 1, PortProtocol::kTcp}});
        out.pool = "off";
        return out;
      }(),
      probe_);
  ASSERT_OK(other);
  EXPECT_EQ(other->ports[0].hostPort, 31000);
  release(allocator, "a");
  release(allocator, "b");
  EXPECT_EQ(quarantined(allocator, 0), 1u);
  EXPECT_EQ(quarantined(allocator, 1), 0u);
  EXPECT_EQ(grab(allocator, "c"), 30001);
  now_ += seconds(5);
  EXPECT_EQ(grab(allocator, "d"), 30000);
}

TEST_F(QuarantineTest, QuarantinesEveryPortOfAReleasedRange) {
  Allocator allocator = make(Strategy::kLowest, {30000, 30011});
  EXPECT_EQ(grab(allocator, "a", 4), 30000);
  release(allocator, "a");
  EXPECT_EQ(quarantined(allocator), 4u);
  EXPECT_EQ(grab(allocator, "b"), 30004);
  EXPECT_EQ(grab(allocator, "c", 4), 30005);
  // 30009-30011 are free but too few: the run is found across quarantined ports.
  EXPECT_EQ(grab(allocator, "d", 4), 30000);
  EXPECT_EQ(quarantined(allocator), 0u);
  EXPECT_EQ(grab(allocator, "e", 3), 30009);
}

TEST_F(QuarantineTest, NeverDelaysStaticClaims) {
  Allocator allocator = make(Strategy::kLowest);
  // A static claim inside the pool, released: its port is free for the strategy at once.
  ASSERT_OK(allocator.allocate(request("a", {}, {{30000, 80, PortProtocol::kTcp, {}}}), probe_));
  release(allocator, "a");
  EXPECT_EQ(quarantined(allocator), 0u);
  EXPECT_EQ(grab(allocator, "b"), 30000);
  // A static claim on a quarantined port is granted, and takes the port out of quarantine.
  release(allocator, "b");
  EXPECT_EQ(quarantined(allocator), 1u);
  ASSERT_OK(allocator.allocate(request("c", {}, {{30000, 80, PortProtocol::kTcp, {}}}), probe_));
  EXPECT_EQ(quarantined(allocator), 0u);
  release(allocator, "c");
  EXPECT_EQ(grab(allocator, "d"), 30000);
}

TEST_F(QuarantineTest, GivesAReturningPodItsQuarantinedPortBack) {
  Allocator allocator = make(Strategy::kLowest);
  EXPECT_EQ(grab(allocator, "a", 1, "pg-0"), 30000);
  release(allocator, "a");
  EXPECT_EQ(grab(allocator, "b", 1, "pg-0"), 30000);
  EXPECT_EQ(quarantined(allocator), 0u);
}

TEST_F(QuarantineTest, NeverExhaustsAPool) {
  for (const Strategy strategy : kStrategies) {
    SCOPED_TRACE(strategyName(strategy));
    Allocator allocator = make(strategy, {30000, 30005});
    for (int round = 0; round < 3; ++round) {
      for (int i = 0; i < 6; ++i) grab(allocator, "a" + std::to_string(i));
      for (int i = 0; i < 6; ++i) release(allocator, "a" + std::to_string(i));
    }
    EXPECT_EQ(quarantined(allocator), 6u);
    for (int i = 0; i < 6; ++i) grab(allocator, "b" + std::to_string(i));
    auto refused = allocator.allocate(request("c", {{"p", 8080, 1, PortProtocol::kTcp}}), probe_);
    ASSERT_FALSE(refused);
    EXPECT_EQ(refused.error().message, "pool \"default\" has no free port (size 6, 6 in use)");
  }
}

TEST_F(QuarantineTest, RestoringLeasesQuarantinesNothing) {
  Allocator before = make(Strategy::kLowest);
  for (const char* id : {"a", "b"}) grab(before, id);
  release(before, "a");
  EXPECT_EQ(quarantined(before), 1u);
  // A restart forgets the quarantine: 30000 is the lowest free port again.
  Allocator after = make(Strategy::kLowest);
  for (const Lease& lease : before.leases()) ASSERT_OK(after.restore(lease));
  EXPECT_EQ(quarantined(after), 0u);
  EXPECT_EQ(grab(after, "c"), 30000);
  // A restored lease, released, is quarantined like any other.
  release(after, "b");
  EXPECT_EQ(quarantined(after), 1u);
  EXPECT_EQ(grab(after, "d"), 30002);
}

TEST_F(QuarantineTest, RefusesADelayAboveTheBoundNamingThePool) {
  auto allocator = Allocator::create(
      {{"games", {{30000, 30009}}, {}, Strategy::kLowest, kMaxReuseDelaySeconds + 1}}, nullptr);
  ASSERT_FALSE(allocator);
  EXPECT_EQ(allocator.error().code, ErrorCode::kInvalidArgument);
  EXPECT_EQ(allocator.error().message,
            "pool \"games\" has a reuse delay of 3601 seconds (at most 3600)");
  EXPECT_OK(Allocator::create(
      {{"games", {{30000, 30009}}, {}, Strategy::kLowest, kMaxReuseDelaySeconds}}, nullptr));
}

}  // namespace
}  // namespace hostport::agent::core
