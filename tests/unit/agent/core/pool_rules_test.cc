#include "agent/core/pool_rules.h"

#include <gtest/gtest.h>

namespace hostport::agent::core {
namespace {

TEST(PoolRulesTest, MatchesGlobsOverWholeNames) {
  EXPECT_TRUE(globMatches("media", "media"));
  EXPECT_FALSE(globMatches("media", "media-2"));
  EXPECT_FALSE(globMatches("media", "medi"));
  EXPECT_TRUE(globMatches("games-*", "games-eu"));
  EXPECT_TRUE(globMatches("games-*", "games-"));
  EXPECT_FALSE(globMatches("games-*", "games"));
  EXPECT_FALSE(globMatches("games-*", "xgames-eu"));
  EXPECT_TRUE(globMatches("*-prod", "web-prod"));
  EXPECT_FALSE(globMatches("*-prod", "web-prod-2"));
  EXPECT_TRUE(globMatches("a*b*c", "a-x-b-y-c"));
  EXPECT_FALSE(globMatches("a*b*c", "a-x-c-y-b"));
  EXPECT_TRUE(globMatches("*", "anything"));
  EXPECT_TRUE(globMatches("*", ""));
  EXPECT_FALSE(globMatches("a", ""));
}

TEST(PoolRulesTest, AcceptsNamespaceNamesAndGlobsOnly) {
  for (const char* good : {"media", "games-*", "*-prod", "*", "a*b", "kube-system"}) {
    EXPECT_FALSE(namespacePatternProblem(good)) << good;
  }
  for (const char* bad : {"", "-*", "*-", "Games", "games_*", "a/b", "games?", "a b"}) {
    EXPECT_TRUE(namespacePatternProblem(bad)) << bad;
  }
  EXPECT_TRUE(namespacePatternProblem(std::string(64, 'a')));
}

TEST(PoolRulesTest, AllowsEveryNamespaceWithoutAList) {
  EXPECT_TRUE(allowsNamespace({}, "anything"));
  const PoolRules rules{{"games-*", "media"}, {}, {}};
  EXPECT_TRUE(allowsNamespace(rules, "media"));
  EXPECT_TRUE(allowsNamespace(rules, "games-1"));
  EXPECT_FALSE(allowsNamespace(rules, "web"));
  EXPECT_FALSE(allowsNamespace(rules, ""));
}

TEST(PoolRulesTest, RefusesANamespaceOutsideTheListNamingPoolNamespaceAndRule) {
  const PoolRules rules{{"games-*", "media"}, {}, {}};
  const auto refused = checkRules(rules, "games", {"web", "nginx", "u"}, 1, {});
  ASSERT_TRUE(refused);
  EXPECT_EQ(refused->reason, Refusal::kNamespace);
  EXPECT_EQ(refused->error.code, ErrorCode::kNotAllowed);
  EXPECT_EQ(refused->error.message,
            "pool \"games\" does not allow namespace \"web\" (namespaces: games-*, media)");
}

TEST(PoolRulesTest, PassesARequestThatTakesNothingFromThePool) {
  const PoolRules rules{{"media"}, 1, 1};
  EXPECT_FALSE(checkRules(rules, "games", {"web", "nginx", ""}, 0, {5, 5}));
}

TEST(PoolRulesTest, CountsQuotasInPortsAndRefusesOnlyPastTheLimit) {
  const PoolRules rules{{}, 10, 4};
  const PodIdentity pod{"games-a", "server-0", "u"};
  EXPECT_FALSE(checkRules(rules, "games", pod, 4, {0, 0}));
  EXPECT_FALSE(checkRules(rules, "games", pod, 2, {8, 2}));  // exactly at both limits

  const auto perPod = checkRules(rules, "games", pod, 3, {0, 2});
  ASSERT_TRUE(perPod);
  EXPECT_EQ(perPod->reason, Refusal::kPodQuota);
  EXPECT_EQ(perPod->error.code, ErrorCode::kQuotaExceeded);
  EXPECT_EQ(perPod->error.message,
            "pool \"games\" allows at most 4 ports per pod: pod \"games-a/server-0\" holds 2 and "
            "asks for 3 (maxPortsPerPod)");

  const auto perNamespace = checkRules(rules, "games", pod, 3, {8, 0});
  ASSERT_TRUE(perNamespace);
  EXPECT_EQ(perNamespace->reason, Refusal::kNamespaceQuota);
  EXPECT_EQ(perNamespace->error.message,
            "pool \"games\" allows at most 10 ports per namespace: namespace \"games-a\" holds 8 "
            "and asks for 3 (maxPortsPerNamespace)");
}

TEST(PoolRulesTest, NamesEachRefusalForTheMetrics) {
  EXPECT_EQ(refusalName(Refusal::kNamespace), "namespace");
  EXPECT_EQ(refusalName(Refusal::kNamespaceQuota), "namespace_quota");
  EXPECT_EQ(refusalName(Refusal::kPodQuota), "pod_quota");
}

TEST(PoolRulesTest, KeysPodsByTheirWholeIdentity) {
  EXPECT_EQ(podQuotaKey({}), "");
  EXPECT_NE(podQuotaKey({"a", "b", "1"}), podQuotaKey({"a", "b", "2"}));
  EXPECT_NE(podQuotaKey({"a-b", "c", ""}), podQuotaKey({"a", "b-c", ""}));
}

}  // namespace
}  // namespace hostport::agent::core
