#include "agent/core/pool_state.h"

#include <gtest/gtest.h>

#include <chrono>
#include <vector>

namespace hostport::agent::core {
namespace {

using std::chrono::seconds;

std::vector<uint16_t> drain(CandidateStream& stream) {
  std::vector<uint16_t> out;
  while (const auto next = stream.next()) out.push_back(*next);
  return out;
}

class PoolStateTest : public ::testing::Test {
 protected:
  PoolState make(PoolSpec spec) {
    return PoolState(spec, quarantined_, [this] { return ++draws_; });
  }

  static PoolSpec spec(Strategy strategy = Strategy::kLowest, uint32_t delay = 30) {
    return PoolSpec{"games", {{200, 204}, {100, 104}}, {}, strategy, delay};
  }

  PortBitmap quarantined_;
  PortBitmap held_;
  PortBitmap excluded_;
  uint64_t draws_ = 0;
  Quarantine::TimePoint now_{seconds(1000)};
};

TEST_F(PoolStateTest, TakesItsNameRangesAndRulesFromTheSpec) {
  PoolSpec games = spec();
  games.rules.maxPortsPerPod = 2;
  const PoolState pool = make(games);
  EXPECT_EQ(pool.name, "games");
  EXPECT_EQ(pool.picker->layout().size(), 10u);
  EXPECT_EQ(pool.picker->layout().ranges().front(), (PortRange{100, 104}));  // sorted
  EXPECT_EQ(pool.used, 0u);
  EXPECT_EQ(pool.rules, games.rules);
  EXPECT_TRUE(pool.counts.countsPods());
  EXPECT_FALSE(make(spec()).counts.countsPods());
  EXPECT_TRUE(pool.quarantine.enabled());
  EXPECT_FALSE(make(spec(Strategy::kLowest, 0)).quarantine.enabled());
}

TEST_F(PoolStateTest, AllowsEveryProtocolUnlessTheSpecNamesSome) {
  const PoolState all = make(spec());
  for (const auto protocol :
       {PortProtocol::kTcp, PortProtocol::kUdp, PortProtocol::kSctp, PortProtocol::kTcpUdp}) {
    EXPECT_TRUE(all.allows(protocol));
  }
  EXPECT_EQ(all.allowedNames(), "tcp, udp, sctp");

  PoolSpec udpOnly = spec();
  udpOnly.protocols = {PortProtocol::kUdp};
  const PoolState udp = make(udpOnly);
  EXPECT_TRUE(udp.allows(PortProtocol::kUdp));
  EXPECT_FALSE(udp.allows(PortProtocol::kTcp));
  EXPECT_FALSE(udp.allows(PortProtocol::kTcpUdp));  // both numbers, and tcp is not allowed
  EXPECT_EQ(udp.allowedNames(), "udp");

  PoolSpec both = spec();
  both.protocols = {PortProtocol::kTcpUdp};
  EXPECT_TRUE(make(both).allows(PortProtocol::kTcp));
  EXPECT_EQ(make(both).allowedNames(), "tcp, udp");
}

TEST_F(PoolStateTest, BuildsThePickerOfItsStrategy) {
  const FreeView view(held_, excluded_);
  PoolState lowest = make(spec(Strategy::kLowest));
  EXPECT_EQ(drain(*lowest.picker->candidates(view, 1)).front(), 100);

  PoolState random = make(spec(Strategy::kRandom));
  const uint64_t before = draws_;
  EXPECT_EQ(drain(*random.picker->candidates(view, 1)).size(), 10u);
  EXPECT_GT(draws_, before);  // the random source it was given

  PoolState roundRobin = make(spec(Strategy::kRoundRobin));
  roundRobin.taken(100);
  roundRobin.freed(100, std::nullopt);  // now the most recently released
  EXPECT_EQ(drain(*roundRobin.picker->candidates(view, 1)).back(), 100);
}

TEST_F(PoolStateTest, CountsItsHeldPortsAndQuarantinesOnlyWhatADynamicGrantGaveBack) {
  PoolState pool = make(spec());
  pool.taken(100);
  pool.taken(101);
  EXPECT_EQ(pool.used, 2u);
  pool.freed(100, now_);          // dynamic
  pool.freed(101, std::nullopt);  // static
  EXPECT_EQ(pool.used, 0u);
  EXPECT_EQ(pool.quarantine.size(), 1u);
  EXPECT_TRUE(pool.quarantine.contains(100));
  EXPECT_TRUE(quarantined_.test(100));  // in the engine's bitmap it was given
  EXPECT_FALSE(pool.quarantine.contains(101));
}

TEST_F(PoolStateTest, TakesAQuarantinedPortOutWhenItIsGrantedAnyway) {
  PoolState pool = make(spec());
  pool.taken(102);
  pool.freed(102, now_);
  ASSERT_TRUE(pool.quarantine.contains(102));
  pool.taken(102);  // the last free port, a sticky pod's, or a static claim
  EXPECT_FALSE(pool.quarantine.contains(102));
  EXPECT_FALSE(quarantined_.test(102));
  EXPECT_EQ(pool.used, 1u);
}

}  // namespace
}  // namespace hostport::agent::core
