#include "admission/claim_book.h"

#include <gtest/gtest.h>

#include <random>
#include <set>

namespace hostport::admission {
namespace {

using agent::core::PoolScope;
using agent::core::PoolSpec;
using agent::core::Strategy;

std::vector<PoolSpec> pools() {
  std::vector<PoolSpec> specs{{"default", {{40000, 40999}}, {}, Strategy::kLowest},
                              {"global", {{42000, 42099}}, {}, Strategy::kLowest}};
  specs[1].scope = PoolScope::kCluster;
  return specs;
}

ClaimBook book() {
  return ClaimBook(pools(), [rng = std::mt19937_64(7)]() mutable { return rng(); });
}

PortClaim claim(uint16_t port, std::string holder = "ns/a", std::string entry = "web",
                uint16_t first = 0, uint16_t count = 1) {
  return {"global", port, std::move(holder), std::move(entry), first == 0 ? port : first,
          count,    "1"};
}

TEST(ClaimBookTest, KeepsClusterPoolsOnlyAndPicksByTheStrategyAroundClaimsAndPending) {
  ClaimBook claims = book();
  EXPECT_TRUE(claims.hasPool("global"));
  EXPECT_FALSE(claims.hasPool("default"));
  EXPECT_FALSE(claims.synced());
  claims.replace({claim(42000), claim(42001, "ns/b")});
  EXPECT_TRUE(claims.synced());
  EXPECT_EQ(claims.reserve("global", 1), 42002);
  EXPECT_EQ(claims.reserve("global", 2), 42003) << "42002 is pending";
  claims.settle("global", 42002, 1, false);  // its create failed: free again
  EXPECT_EQ(claims.reserve("global", 1), 42002);
  EXPECT_EQ(claims.counts().at(0).claimed, 5u);
  EXPECT_EQ(claims.counts().at(0).size, 100u);
  EXPECT_FALSE(claims.reserve("default", 1)) << "a node pool is never claimed";
}

TEST(ClaimBookTest, AScatteredReserveLeavesTheStrategysOrder) {
  ClaimBook claims = book();
  claims.replace({});
  std::set<uint16_t> picked;
  for (int i = 0; i < 5; ++i) picked.insert(*claims.reserve("global", 1, true));
  EXPECT_EQ(picked.size(), 5u);
  EXPECT_NE(*picked.begin(), 42000) << "seeded: the random picker starts elsewhere";
}

TEST(ClaimBookTest, AHolderGetsBackABlockWhollyItsOwn) {
  ClaimBook claims = book();
  claims.replace({claim(42010, "ns/web-0", "rtp", 42010, 2),
                  claim(42011, "ns/web-0", "rtp", 42010, 2), claim(42050, "ns/web-0", "web")});
  EXPECT_EQ(claims.heldBy("ns/web-0", "global", "rtp", 2), 42010);
  EXPECT_EQ(claims.heldBy("ns/web-0", "global", "web", 1), 42050);
  EXPECT_FALSE(claims.heldBy("ns/web-0", "global", "rtp", 3)) << "another width is another block";
  EXPECT_FALSE(claims.heldBy("ns/web-1", "global", "web", 1));
  claims.remove(claim(42011, "ns/web-0", "rtp", 42010, 2));
  EXPECT_FALSE(claims.heldBy("ns/web-0", "global", "rtp", 2)) << "half a block is no block";
  // A MODIFIED claim naming another holder moves the port to it.
  claims.add(claim(42050, "ns/other", "web"));
  EXPECT_FALSE(claims.heldBy("ns/web-0", "global", "web", 1));
  EXPECT_EQ(claims.heldBy("ns/other", "global", "web", 1), 42050);
}

}  // namespace
}  // namespace hostport::admission
