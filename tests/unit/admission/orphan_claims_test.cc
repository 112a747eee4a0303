#include "admission/orphan_claims.h"

#include <gtest/gtest.h>

#include "admission/port_claim.h"
#include "kube/api_time.h"

namespace hostport::admission {
namespace {

using namespace std::chrono_literals;
using Clock = OrphanClaims::Clock;

PortClaim claimOf(std::string holder, uint16_t port) {
  return {"global", port, std::move(holder), "web", port, 1, "7"};
}

TEST(OrphanClaimsTest, ReleasesOnlyAfterEveryPassAndTheWholeGrace) {
  OrphanClaims orphans(10s, 3);
  const std::vector claims{claimOf("ns/gone", 42000), claimOf("ns/live", 42001)};
  const ClaimHolders holders{{"ns/live"}, {}};
  const auto t0 = Clock::now();
  EXPECT_TRUE(orphans.pass(claims, holders, t0).empty());
  EXPECT_TRUE(orphans.pass(claims, holders, t0 + 1s).empty());
  EXPECT_TRUE(orphans.pass(claims, holders, t0 + 2s).empty()) << "three passes, but not the grace";
  EXPECT_EQ(orphans.missing(), 1u);
  const auto released = orphans.pass(claims, holders, t0 + 10s);
  ASSERT_EQ(released.size(), 1u);
  EXPECT_EQ(released[0].holder, "ns/gone");
  EXPECT_EQ(orphans.missing(), 0u);
}

TEST(OrphanClaimsTest, AHolderSeenAgainOrANewLeaderStartsOver) {
  OrphanClaims orphans(2s, 3);
  const std::vector claims{claimOf("ns/back", 42000)};
  const auto t0 = Clock::now();
  orphans.pass(claims, {}, t0);
  orphans.pass(claims, {}, t0 + 1s);
  orphans.pass(claims, {{"ns/back"}, {}}, t0 + 2s);  // its pod is back
  EXPECT_TRUE(orphans.pass(claims, {}, t0 + 3s).empty());
  EXPECT_TRUE(orphans.pass(claims, {}, t0 + 4s).empty());
  orphans.forget();
  EXPECT_TRUE(orphans.pass(claims, {}, t0 + 5s).empty());
  EXPECT_TRUE(orphans.pass(claims, {}, t0 + 6s).empty());
  EXPECT_EQ(orphans.pass(claims, {}, t0 + 7s).size(), 1u);
}

TEST(OrphanClaimsTest, APortClaimedAgainByAnotherHolderCountsFromItsOwnStart) {
  OrphanClaims orphans(2s, 2);
  const auto t0 = Clock::now();
  orphans.pass({claimOf("ns/a", 42000)}, {}, t0);
  EXPECT_TRUE(orphans.pass({claimOf("ns/b", 42000)}, {}, t0 + 3s).empty());
}

TEST(OrphanClaimsTest, AStatefulSetKeepsTheOrdinalsBelowItsReplicas) {
  const ClaimHolders holders{{}, {{"ns/web", 2}}};
  EXPECT_TRUE(keptByStatefulSet("ns/web-0", holders));
  EXPECT_TRUE(keptByStatefulSet("ns/web-1", holders));
  EXPECT_FALSE(keptByStatefulSet("ns/web-2", holders));
  EXPECT_FALSE(keptByStatefulSet("ns/web-x", holders));
  EXPECT_FALSE(keptByStatefulSet("ns/web-", holders));
  EXPECT_FALSE(keptByStatefulSet("other/web-0", holders));
  EXPECT_FALSE(keptByStatefulSet("ns/db-0", holders));
}

TEST(PortClaimTest, ALeaseReadsBackAsTheClaimItWasMadeFrom) {
  const PortClaim claim{"global", 42003, "ns/web-0", "rtp", 42002, 4, ""};
  nlohmann::json lease =
      claimLease(claim, "hostport-system", std::chrono::system_clock::time_point{});
  EXPECT_EQ(lease["metadata"]["name"], "global.42003");
  EXPECT_EQ(lease["spec"]["acquireTime"], "1970-01-01T00:00:00.000000Z");
  lease["metadata"]["resourceVersion"] = "12";
  PortClaim read = readClaimLease(lease).value();
  EXPECT_EQ(read.resourceVersion, "12");
  read.resourceVersion.clear();
  EXPECT_EQ(read, claim);
}

TEST(PortClaimTest, ALeaseThatIsNoClaimIsIgnored) {
  const PortClaim claim{"global", 42003, "ns/web-0", "rtp", 42002, 4, ""};
  const nlohmann::json good = claimLease(claim, "ns", {});
  for (const auto& [pointer, value] : std::vector<std::pair<std::string, nlohmann::json>>{
           {"/metadata/name", "global.42004"},
           {"/metadata/labels/hostport.io~1port", "70000"},
           {"/metadata/labels/hostport.io~1port", "42x"},
           {"/metadata/annotations/hostport.io~1first", "42004"},
           {"/metadata/annotations/hostport.io~1count", "0"},
           {"/spec/holderIdentity", ""},
           {"/metadata/labels", "x"}}) {
    nlohmann::json bad = good;
    bad[nlohmann::json::json_pointer(pointer)] = value;
    EXPECT_FALSE(readClaimLease(bad)) << pointer << " = " << value;
  }
}

TEST(ApiTimeTest, MicroTimeHasSixDigitsOfFraction) {
  const auto time = std::chrono::system_clock::time_point{} + 1500ms + 7us;
  EXPECT_EQ(kube::apiMicroTime(time), "1970-01-01T00:00:01.500007Z");
}

}  // namespace
}  // namespace hostport::admission
