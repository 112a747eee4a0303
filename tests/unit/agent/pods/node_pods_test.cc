// What the agent keeps of its node's pods: the record read from a pod object (only what its
// decisions read: the author's hostport.io/ annotations, hostNetwork, the pool requests summed as
// the scheduler sums them, phase, deletion), and the cache with its changes.

#include "agent/pods/node_pods.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "tests/support/result_assertions.h"

namespace hostport::agent::pods {
namespace {

using nlohmann::json;
using ::testing::ElementsAre;
using ::testing::Pair;

json pod(std::string_view uid, std::string_view name, json annotations = json::object()) {
  return {{"apiVersion", "v1"},
          {"kind", "Pod"},
          {"metadata",
           {{"uid", uid},
            {"name", name},
            {"namespace", "games"},
            {"resourceVersion", "1001"},
            {"annotations", std::move(annotations)}}},
          {"spec",
           {{"nodeName", "node-a"},
            {"hostNetwork", true},
            {"containers",
             {{{"name", "app"},
               {"resources",
                {{"requests", {{"cpu", "1"}, {"hostport.io/games", "2"}}},
                 {"limits", {{"hostport.io/games", "2"}}}}}},
              {{"name", "sidecar"},
               {"resources",
                {{"requests", {{"hostport.io/games", "1"}, {"hostport.io/web", "1k"}}}}}}}}}},
          {"status", {{"phase", "Running"}, {"podIP", "10.0.0.5"}}}};
}

TEST(NodePodTest, KeepsOnlyWhatTheAgentReads) {
  ASSERT_OK_AND_ASSIGN(const NodePod record,
                       readNodePod(pod("u-1", "gs-0",
                                       {{"hostport.io/ports", "game=7777/udp"},
                                        {"hostport.io/assigned", "{}"},
                                        {"hostport.io/allocated-game", "30001"},
                                        {"example.com/other", "x"}})));
  EXPECT_EQ(record.uid, "u-1");
  EXPECT_EQ(record.describe(), "games/gs-0");
  EXPECT_THAT(record.annotations, ElementsAre(Pair("hostport.io/ports", "game=7777/udp")));
  EXPECT_TRUE(record.hostNetwork);
  EXPECT_THAT(record.poolRequests, ElementsAre(Pair("games", 3)))
      << "summed over containers; 1k is no whole count of ports";
  EXPECT_EQ(record.phase, "Running");
  EXPECT_FALSE(record.deleting);
  EXPECT_FALSE(record.finished());

  json deleted = pod("u-1", "gs-0");
  deleted["metadata"]["deletionTimestamp"] = "2026-11-29T09:00:00Z";
  deleted["status"]["phase"] = "Succeeded";
  ASSERT_OK_AND_ASSIGN(const NodePod gone, readNodePod(deleted));
  EXPECT_TRUE(gone.deleting);
  EXPECT_TRUE(gone.finished());

  json nameless = pod("u-2", "x");
  nameless["metadata"].erase("name");
  const auto refused = readNodePod(nameless);
  ASSERT_FALSE(refused.has_value());
  EXPECT_EQ(refused.error().message, "a pod without metadata.name");
}

TEST(NodePodTest, AHostNetworkPodKeepsItsHostPortsAndOthersNone) {
  json asked = pod("u-1", "gs-0");
  asked["spec"]["containers"][0]["ports"] = {
      {{"containerPort", 42001}, {"hostPort", 42001}, {"protocol", "UDP"}},
      {{"containerPort", 8080}},                                        // no hostPort
      {{"containerPort", 9090}, {"hostPort", 9090}},                    // TCP by default
      {{"containerPort", 70000}, {"hostPort", 70000}},                  // malformed: left out
      {{"containerPort", 53}, {"hostPort", 53}, {"protocol", "XTP"}}};  // left out too
  ASSERT_OK_AND_ASSIGN(const NodePod record, readNodePod(asked));
  ASSERT_EQ(record.hostPorts.size(), 2u);
  EXPECT_EQ(record.hostPorts[0], (StaticPortClaim{42001, 42001, PortProtocol::kUdp, std::nullopt}));
  EXPECT_EQ(record.hostPorts[1], (StaticPortClaim{9090, 9090, PortProtocol::kTcp, std::nullopt}));

  asked["spec"]["hostNetwork"] = false;
  ASSERT_OK_AND_ASSIGN(const NodePod own, readNodePod(asked));
  EXPECT_TRUE(own.hostPorts.empty()) << "a pod in its own netns has its hostPorts from its ADD";
}

TEST(NodePodsTest, TellsWhatCameChangedAndWentAndNothingElse) {
  NodePods cache;
  std::vector<std::string> heard;
  cache.listen([&](const PodChange& change) {
    heard.push_back((change.before ? change.before->name : "-") + ">" +
                    (change.after ? change.after->name : "-"));
  });
  EXPECT_FALSE(cache.synced());
  cache.replace({pod("u-1", "a"), pod("u-2", "b")});
  EXPECT_TRUE(cache.synced());
  EXPECT_THAT(heard, ElementsAre("->a", "->b"));

  heard.clear();
  json status = pod("u-1", "a");
  status["status"]["podIP"] = "10.0.0.9";
  status["metadata"]["resourceVersion"] = "1002";
  status["metadata"]["annotations"]["hostport.io/assigned"] = "{}";
  cache.upsert(status);  // nothing the agent reads: no change
  EXPECT_TRUE(heard.empty());
  json moved = pod("u-1", "a", {{"hostport.io/ports", "web=8080"}});
  cache.upsert(moved);
  EXPECT_THAT(heard, ElementsAre("a>a"));

  heard.clear();
  cache.replace({pod("u-2", "b"), pod("u-3", "c")});  // a went while the watch was away
  EXPECT_THAT(heard, ElementsAre("a>-", "->c"));
  cache.remove(pod("u-3", "c"));
  EXPECT_THAT(heard, ElementsAre("a>-", "->c", "c>-"));
  EXPECT_EQ(cache.size(), 1u);
  EXPECT_EQ(cache.byUid("u-2")->name, "b");
  EXPECT_FALSE(cache.byUid("u-1").has_value());

  json unreadable = pod("", "x");
  cache.upsert(unreadable);
  EXPECT_EQ(cache.unreadable(), 1u);
  EXPECT_EQ(cache.size(), 1u);
}

TEST(NodePodsTest, AStaticPodIsKnownByTheUidItsSandboxCarries) {
  NodePods cache;
  json mirror = pod("u-mirror", "etcd-node-a");
  mirror["metadata"]["annotations"]["kubernetes.io/config.mirror"] = "6a0d3b4bb2e1b7f0";
  cache.replace({mirror, pod("u-2", "b")});
  EXPECT_EQ(cache.byUid("u-mirror")->sandboxUid(), "6a0d3b4bb2e1b7f0");
  EXPECT_EQ(cache.byUid("u-2")->sandboxUid(), "u-2");
  EXPECT_TRUE(cache.hasSandboxUid("6a0d3b4bb2e1b7f0"));
  EXPECT_EQ(cache.bySandboxUid("6a0d3b4bb2e1b7f0")->name, "etcd-node-a");
  EXPECT_FALSE(cache.hasSandboxUid("u-mirror")) << "no sandbox carries the mirror's own UID";
  EXPECT_TRUE(cache.hasSandboxUid("u-2"));
  EXPECT_FALSE(cache.hasSandboxUid("u-3"));
  cache.remove(mirror);
  EXPECT_FALSE(cache.hasSandboxUid("6a0d3b4bb2e1b7f0"));
}

TEST(NodePodsTest, TheViewIsAsNewAsTheStartOfTheListItCameFrom) {
  NodePods cache;
  EXPECT_FALSE(cache.listedFrom().has_value());
  const auto before = std::chrono::steady_clock::now();
  cache.listing();
  const auto started = std::chrono::steady_clock::now();
  EXPECT_FALSE(cache.listedFrom().has_value()) << "a list begun is no view yet";
  cache.replace({pod("u-1", "a")});
  ASSERT_TRUE(cache.listedFrom().has_value());
  EXPECT_GE(*cache.listedFrom(), before);
  EXPECT_LE(*cache.listedFrom(), started);
}

}  // namespace
}  // namespace hostport::agent::pods
