#include "agent/core/pool_spec.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <string>
#include <vector>

#include "agent/core/port_picker.h"
#include "tests/support/result_assertions.h"

namespace hostport::agent::core {
namespace {

PoolSpec pool(std::string name, std::vector<PortRange> ranges) {
  return {std::move(name), std::move(ranges), {}, Strategy::kLowest};
}

std::string refusal(const std::vector<PoolSpec>& pools) {
  auto owners = validatePoolSpecs(pools);
  EXPECT_FALSE(owners) << "accepted";
  if (owners) return "";
  EXPECT_EQ(owners.error().code, ErrorCode::kInvalidArgument);
  return owners.error().message;
}

TEST(StrategyTest, NamesAndParsesStrategies) {
  for (const auto strategy : {Strategy::kLowest, Strategy::kRandom, Strategy::kRoundRobin}) {
    EXPECT_EQ(parseStrategy(strategyName(strategy)), strategy);
  }
  EXPECT_EQ(strategyName(Strategy::kRoundRobin), "round-robin");
  auto bad = parseStrategy("fastest");
  ASSERT_FALSE(bad);
  EXPECT_NE(bad.error().message.find("\"fastest\""), std::string::npos);
}

TEST(PoolSpecTest, GivesEachPortNumberThePoolWhoseRangesHoldIt) {
  ASSERT_OK_AND_ASSIGN(const PoolOfPort owners,
                       validatePoolSpecs({pool("default", {{30000, 30009}}),
                                          pool("games", {{40000, 40004}, {41000, 41000}})}));
  ASSERT_EQ(owners.size(), kPortSpace);
  EXPECT_EQ(owners[29999], kNoPool);
  EXPECT_EQ(owners[30000], 0);
  EXPECT_EQ(owners[30009], 0);
  EXPECT_EQ(owners[30010], kNoPool);
  EXPECT_EQ(owners[40000], 1);
  EXPECT_EQ(owners[40004], 1);
  EXPECT_EQ(owners[40005], kNoPool);
  EXPECT_EQ(owners[41000], 1);
  EXPECT_EQ(owners[0], kNoPool);
  EXPECT_EQ(owners[65535], kNoPool);
}

TEST(PoolSpecTest, AcceptsNoPoolsAtAll) {
  ASSERT_OK_AND_ASSIGN(const PoolOfPort owners, validatePoolSpecs({}));
  EXPECT_EQ(std::ranges::count(owners, kNoPool), static_cast<long>(kPortSpace));
}

TEST(PoolSpecTest, AcceptsRangesThatTouchWithoutOverlapping) {
  EXPECT_OK(validatePoolSpecs({pool("a", {{100, 199}, {200, 200}}), pool("b", {{201, 65535}})}));
}

TEST(PoolSpecTest, RefusesAPoolWithoutANameOrWithTheNameOfAnEarlierOne) {
  EXPECT_EQ(refusal({pool("", {{100, 200}})}), "a pool needs a name");
  EXPECT_EQ(refusal({pool("a", {{100, 200}}), pool("a", {{300, 400}})}),
            "duplicate pool name \"a\"");
}

TEST(PoolSpecTest, RefusesAPoolWithoutRangesOrWithAnEmptyOne) {
  EXPECT_EQ(refusal({pool("bare", {})}), "pool \"bare\" has no port range");
  EXPECT_EQ(refusal({pool("odd", {{200, 100}})}),
            "pool \"odd\" has an empty or invalid range 200-100");
  EXPECT_EQ(refusal({pool("odd", {{0, 10}})}), "pool \"odd\" has an empty or invalid range 0-10");
}

TEST(PoolSpecTest, NamesBothRangesOfAnOverlap) {
  EXPECT_EQ(refusal({pool("a", {{30000, 30010}}), pool("b", {{30005, 30020}})}),
            "pool \"b\" range 30005-30020 overlaps pool \"a\" range 30000-30010");
  EXPECT_EQ(refusal({pool("a", {{100, 200}, {150, 160}})}),
            "pool \"a\" range 150-160 overlaps pool \"a\" range 100-200");
  // The same range twice in one pool: the only range holding the port is itself.
  EXPECT_EQ(refusal({pool("a", {{100, 200}, {100, 200}})}),
            "pool \"a\" range 100-200 overlaps pool \"a\" range 100-200");
}

TEST(PoolSpecTest, BoundsTheReuseDelay) {
  PoolSpec spec = pool("games", {{30000, 30009}});
  spec.reuseDelaySeconds = kMaxReuseDelaySeconds;
  EXPECT_OK(validatePoolSpecs({spec}));
  spec.reuseDelaySeconds = kMaxReuseDelaySeconds + 1;
  EXPECT_EQ(refusal({spec}), "pool \"games\" has a reuse delay of 3601 seconds (at most 3600)");
}

TEST(PoolSpecTest, RefusesRulesThatDoNotParse) {
  PoolSpec spec = pool("games", {{30000, 30009}});
  spec.rules.namespaces = {"games_*"};
  const std::string message = refusal({spec});
  EXPECT_NE(message.find("games_*"), std::string::npos) << message;
  EXPECT_EQ(message.rfind("pool \"games\" namespace \"games_*\" ", 0), 0u) << message;
  spec.rules.namespaces = {"games-*"};
  EXPECT_OK(validatePoolSpecs({spec}));
}

TEST(PoolSpecTest, ReportsTheFirstProblemInPoolOrder) {
  PoolSpec badRules = pool("first", {{100, 199}});
  badRules.rules.namespaces = {""};
  // The first pool's rules fail before the second pool's duplicate name is looked at.
  const std::string message = refusal({badRules, pool("first", {{300, 399}})});
  EXPECT_NE(message.find("namespace"), std::string::npos) << message;
  EXPECT_EQ(message.find("duplicate"), std::string::npos) << message;
}

}  // namespace
}  // namespace hostport::agent::core
