// Cluster pools claimed at admission (issue 27): two admission replicas in process, over real TLS
// on 127.0.0.1, against the fake API server's Leases. Every review goes to POST /claim, as the
// claim webhook sends it.
#include <gtest/gtest.h>

#include <atomic>
#include <map>
#include <mutex>
#include <set>
#include <thread>

#include "admission/admission_server.h"
#include "admission/port_claim.h"
#include "kube/base64.h"
#include "kube/https_transport.h"
#include "tests/fakes/fake_kube_apiserver.h"
#include "tests/support/result_assertions.h"
#include "tests/support/temp_dir.h"
#include "tests/support/wait.h"
#include "tests/unit/admission/review_samples.h"
#include "tests/unit/admission/webhook_client.h"

namespace hostport::admission {
namespace {

using nlohmann::json;
using namespace std::chrono_literals;

constexpr std::string_view kLeases = "/apis/coordination.k8s.io/v1/namespaces/hostport/leases/";

std::string leasePath(std::string_view pool, uint32_t port) {
  return std::string(kLeases) + std::string(pool) + "." + std::to_string(port);
}

/// "default" 40000-40999 (node); "global" and "tiny" (cluster) at `globalRanges`, 41000-41009.
std::vector<agent::core::PoolSpec> pools(agent::core::Strategy strategy) {
  using namespace agent::core;
  std::vector<PoolSpec> specs{{"default", {{40000, 40999}}, {}, Strategy::kLowest},
                              {"global", {{50000, 51999}}, {}, strategy},
                              {"tiny", {{41000, 41009}}, {}, Strategy::kLowest}};
  specs[1].scope = PoolScope::kCluster;
  specs[2].scope = PoolScope::kCluster;
  return specs;
}

json pod(std::string_view name, json annotations) {
  json object = samples::samplePod(std::move(annotations));
  object["metadata"]["name"] = name;
  return object;
}

json reviewOf(const json& object) {
  json body = samples::podReview(object);
  body["request"]["name"] = object["metadata"].value("name", "");
  body["request"]["uid"] = "review-" + object["metadata"].value("name", "x");
  return body;
}

class ClusterClaimsTest : public ::testing::Test {
 protected:
  void SetUp() override { startApi(); }

  void startApi() {
    auto started = kube::FakeKubeApiServer::start();
    ASSERT_OK(started);
    api_ = std::move(*started);
    const json webhooks = {
        {"webhooks", {{{"name", "x.hostport.io"}, {"clientConfig", json::object()}}}}};
    ASSERT_OK(api_->putObject(
        "/apis/admissionregistration.k8s.io/v1/validatingwebhookconfigurations/hostport-admission",
        webhooks));
    ASSERT_OK(api_->putObject(
        "/apis/admissionregistration.k8s.io/v1/mutatingwebhookconfigurations/hostport-admission",
        webhooks));
  }

  void startReplicas(int count, agent::core::Strategy strategy = agent::core::Strategy::kLowest,
                     uint32_t graceSeconds = 300) {
    auto kubeconfig = api_->writeKubeconfig(dir_.path());
    ASSERT_OK(kubeconfig);
    for (int i = 0; i < count; ++i) {
      ResolvedAdmissionConfig config;
      config.settings.kubeconfig = kubeconfig->string();
      config.settings.threads = 4;
      config.listen = {*IpAddress::parse("127.0.0.1"), 0};
      config.pools = pools(strategy);
      config.settings.claimGraceSeconds = graceSeconds;
      config.settings.leaderLeaseSeconds = 2;
      auto server = AdmissionServer::start(std::move(config));
      ASSERT_OK(server);
      servers_.push_back(std::move(*server));
      serving_.emplace_back([raw = servers_.back().get()] { raw->serve(); });
    }
  }

  void TearDown() override {
    for (auto& server : servers_) {
      if (server) server->stop();
    }
    serving_.clear();
  }

  std::unique_ptr<kube::HttpsTransport> client(std::size_t replica) const {
    return samples::webhookClient(*api_, servers_.at(replica)->webhookPort());
  }

  static Result<json> claim(kube::HttpsTransport& https, const json& object) {
    HOSTPORT_TRY(const auto answer,
                 https.exchange({"POST", "/claim", "application/json", reviewOf(object).dump()}, "",
                                10000ms));
    if (answer.status != 200) {
      return fail(ErrorCode::kUnavailable,
                  "HTTP " + std::to_string(answer.status) + ": " + answer.body);
    }
    return json::parse(answer.body)["response"];
  }

  /// The pod as the claim's patch leaves it.
  static json patched(const json& object, const json& response) {
    if (!response.contains("patch")) return object;
    const json ops =
        json::parse(kube::decodeBase64(response["patch"].get<std::string>(), "patch").value());
    return object.patch(ops);
  }

  /// The Leases of `pool` between first and last that the fake API server holds.
  std::map<uint32_t, json> leases(std::string_view pool, uint32_t first, uint32_t last) const {
    std::map<uint32_t, json> found;
    for (uint32_t port = first; port <= last; ++port) {
      if (auto lease = api_->object(leasePath(pool, port))) found[port] = *lease;
    }
    return found;
  }

  std::unique_ptr<kube::FakeKubeApiServer> api_;
  test::TempDir dir_;
  std::vector<std::unique_ptr<AdmissionServer>> servers_;
  std::vector<std::jthread> serving_;
};

TEST_F(ClusterClaimsTest, AClaimedPortIsWrittenIntoThePodAndItsLeaseNamesThePod) {
  startReplicas(1);
  auto https = client(0);
  const json asking = pod(
      "web-0", {{"hostport.io/ports", "web=8080, dns=53/tcpudp"}, {"hostport.io/pool", "global"}});
  ASSERT_OK_AND_ASSIGN(const json answer, claim(*https, asking));
  ASSERT_EQ(answer["allowed"], true) << answer.dump();
  const json after = patched(asking, answer);
  const json& ports = after["spec"]["containers"][0]["ports"];
  ASSERT_EQ(ports.size(), 3u) << after.dump();
  EXPECT_EQ(ports[0], (json{{"containerPort", 8080}, {"hostPort", 50000}, {"protocol", "TCP"}}));
  EXPECT_EQ(ports[1], (json{{"containerPort", 53}, {"hostPort", 50001}, {"protocol", "TCP"}}));
  EXPECT_EQ(ports[2], (json{{"containerPort", 53}, {"hostPort", 50001}, {"protocol", "UDP"}}));
  const json& notes = after["metadata"]["annotations"];
  EXPECT_EQ(notes["hostport.io/allocated-web"], "50000");
  EXPECT_EQ(notes["hostport.io/allocated-dns"], "50001");
  EXPECT_EQ(notes["hostport.io/claim-holder"], "games-eu/web-0");

  const auto held = leases("global", 50000, 50010);
  ASSERT_EQ(held.size(), 2u);
  const auto claim = readClaimLease(held.at(50001));
  ASSERT_TRUE(claim);
  EXPECT_EQ(claim->holder, "games-eu/web-0");
  EXPECT_EQ(claim->entry, "dns");
  EXPECT_EQ(held.at(50001)["metadata"]["labels"]["hostport.io/pool"], "global");
  EXPECT_EQ(held.at(50001)["metadata"]["labels"]["hostport.io/port"], "50001");
  EXPECT_TRUE(held.at(50001)["spec"]["acquireTime"].get<std::string>().ends_with("Z"));

  // The validating webhook judges the patched pod as the node will: one port per entry.
  ASSERT_OK_AND_ASSIGN(
      const auto validated,
      https->exchange({"POST", "/validate", "application/json", reviewOf(after).dump()}, "",
                      10000ms));
  EXPECT_EQ(json::parse(validated.body)["response"]["allowed"], true) << validated.body;
}

TEST_F(ClusterClaimsTest, AThousandPodsThroughTwoReplicasGetAThousandDistinctPorts) {
  startReplicas(2);
  constexpr int kPods = 1000;
  constexpr int kClients = 16;
  std::mutex mutex;
  std::map<std::string, std::string> portOf;  // pod -> allocated-web
  std::atomic<int> failed{0};
  {
    std::vector<std::jthread> clients;
    for (int c = 0; c < kClients; ++c) {
      clients.emplace_back([&, c] {
        auto https = client(static_cast<std::size_t>(c % 2));
        for (int i = c; i < kPods; i += kClients) {
          const std::string name = "game-" + std::to_string(i);
          const json asking =
              pod(name, {{"hostport.io/ports", "web=7777"}, {"hostport.io/pool", "global"}});
          auto answer = claim(*https, asking);
          if (!answer || (*answer)["allowed"] != true) {
            ++failed;
            continue;
          }
          const json after = patched(asking, *answer);
          std::lock_guard lock(mutex);
          portOf[name] = after["metadata"]["annotations"].value("hostport.io/allocated-web", "");
        }
      });
    }
  }
  EXPECT_EQ(failed.load(), 0);
  ASSERT_EQ(portOf.size(), static_cast<std::size_t>(kPods));
  std::set<std::string> distinct;
  for (const auto& [name, port] : portOf) distinct.insert(port);
  EXPECT_EQ(distinct.size(), static_cast<std::size_t>(kPods)) << "no port given twice";
  const auto held = leases("global", 50000, 51999);
  EXPECT_EQ(held.size(), static_cast<std::size_t>(kPods)) << "one Lease per pod, none left over";
  for (const auto& [port, lease] : held) {
    const auto claim = readClaimLease(lease);
    ASSERT_TRUE(claim);
    const std::string name = claim->holder.substr(claim->holder.find('/') + 1);
    EXPECT_EQ(portOf[name], std::to_string(port)) << "the Lease names the pod that got the port";
  }
}

TEST_F(ClusterClaimsTest, APodReCreatedUnderItsNameGetsItsPortsBack) {
  startReplicas(2, agent::core::Strategy::kRandom);
  const json asking = pod("db-0", {{"hostport.io/ports", "sql=5432, rtp=6000-6003/udp"},
                                   {"hostport.io/pool", "global"}});
  auto first = client(0);
  ASSERT_OK_AND_ASSIGN(const json one, claim(*first, asking));
  ASSERT_EQ(one["allowed"], true) << one.dump();
  const json notes = patched(asking, one)["metadata"]["annotations"];
  const std::size_t claimed = leases("global", 50000, 51999).size();
  EXPECT_EQ(claimed, 5u);
  // The other replica, once its watch has brought the claims, gives the same ports back.
  ASSERT_TRUE(test::waitUntil(
      [&] { return servers_[1]->claimer()->book().counts().at(0).claimed == claimed; }, 10s));
  auto second = client(1);
  ASSERT_OK_AND_ASSIGN(const json again, claim(*second, asking));
  ASSERT_EQ(again["allowed"], true) << again.dump();
  EXPECT_EQ(patched(asking, again)["metadata"]["annotations"], notes);
  EXPECT_EQ(leases("global", 50000, 51999).size(), claimed) << "no new claim";
}

TEST_F(ClusterClaimsTest, ARangeIsOneContiguousBlockOrNothing) {
  startReplicas(1);
  auto https = client(0);
  // Another holder has 41002: the four ports must lie above it.
  PortClaim other{"tiny", 41002, "elsewhere/x", "p", 41002, 1, ""};
  ASSERT_OK(api_->putObject(leasePath("tiny", 41002), claimLease(other, "hostport", {})));
  // Once the watch has brought it the pool's strategy steps over it; before, a 409 would send the
  // claim to a random block (also right, but not the one checked here).
  ASSERT_TRUE(test::waitUntil(
      [&] { return servers_[0]->claimer()->book().counts().at(1).claimed == 1; }, 10s));
  const json a =
      pod("a", {{"hostport.io/ports", "rtp=5000-5003/udp"}, {"hostport.io/pool", "tiny"}});
  ASSERT_OK_AND_ASSIGN(const json first, claim(*https, a));
  ASSERT_EQ(first["allowed"], true) << first.dump();
  EXPECT_EQ(patched(a, first)["metadata"]["annotations"]["hostport.io/allocated-rtp"],
            "41003-41006");
  // Two entries where only the first fits: neither is kept.
  const json b =
      pod("b", {{"hostport.io/ports", "one=80, rtp=5000-5003/udp"}, {"hostport.io/pool", "tiny"}});
  ASSERT_OK_AND_ASSIGN(const json second, claim(*https, b));
  ASSERT_EQ(second["allowed"], false);
  EXPECT_EQ(second["status"]["code"], 403);
  EXPECT_NE(second["status"]["message"].get<std::string>().find(
                "cluster pool \"tiny\" has no 4 contiguous free ports"),
            std::string::npos)
      << second.dump();
  EXPECT_EQ(leases("tiny", 41000, 41009).size(), 5u) << "b's first entry was deleted again";
}

TEST_F(ClusterClaimsTest, AHostNetworkPodsClaimIsWrittenWithContainerPortEqualToHostPort) {
  startReplicas(1);
  auto https = client(0);
  json host =
      pod("h", {{"hostport.io/ports", "game/udp, rtp*2/udp"}, {"hostport.io/pool", "global"}});
  host["spec"]["hostNetwork"] = true;
  ASSERT_OK_AND_ASSIGN(const json answer, claim(*https, host));
  ASSERT_EQ(answer["allowed"], true) << answer.dump();
  const json after = patched(host, answer);
  EXPECT_EQ(after["spec"]["containers"][0]["ports"],
            (json{{{"containerPort", 50000}, {"hostPort", 50000}, {"protocol", "UDP"}},
                  {{"containerPort", 50001}, {"hostPort", 50001}, {"protocol", "UDP"}},
                  {{"containerPort", 50002}, {"hostPort", 50002}, {"protocol", "UDP"}}}));
  EXPECT_EQ(after["metadata"]["annotations"]["hostport.io/allocated-rtp"], "50001-50002");
}

TEST_F(ClusterClaimsTest, OtherPodsPassUntouchedAndAWrittenHostPortIsRefused) {
  startReplicas(1);
  auto https = client(0);
  ASSERT_OK_AND_ASSIGN(const json node, claim(*https, pod("n", {{"hostport.io/ports", "web=80"}})));
  EXPECT_EQ(node["allowed"], true);
  EXPECT_FALSE(node.contains("patch"));
  // A hostPort the author wrote on the entry's port is not overwritten.
  json written = pod("w", {{"hostport.io/ports", "web=8080"}, {"hostport.io/pool", "global"}});
  written["spec"]["containers"][0]["ports"] = {
      {{"containerPort", 8080}, {"hostPort", 9000}, {"protocol", "TCP"}}};
  ASSERT_OK_AND_ASSIGN(const json overwritten, claim(*https, written));
  EXPECT_EQ(overwritten["allowed"], false);
  EXPECT_NE(overwritten["status"]["message"].get<std::string>().find("has hostPort 9000"),
            std::string::npos);
  EXPECT_TRUE(leases("global", 50000, 51999).empty()) << "the refused claim was deleted again";
}

TEST_F(ClusterClaimsTest, AnUnreachableApiServerRefusesTheClaimWithoutAHang) {
  startReplicas(1);
  auto https = client(0);
  ASSERT_OK_AND_ASSIGN(
      const json ok,
      claim(*https, pod("a", {{"hostport.io/ports", "web=80"}, {"hostport.io/pool", "global"}})));
  ASSERT_EQ(ok["allowed"], true);
  const std::string collection(kLeases.substr(0, kLeases.size() - 1));
  api_->injectFault(
      kube::FakeKubeFault::answer(503).on(collection).forMethod("POST").repeated(100));
  ASSERT_OK_AND_ASSIGN(
      const json refused,
      claim(*https, pod("b", {{"hostport.io/ports", "web=80"}, {"hostport.io/pool", "global"}})));
  ASSERT_EQ(refused["allowed"], false);
  EXPECT_EQ(refused["status"]["code"], 503);
  EXPECT_NE(refused["status"]["message"].get<std::string>().find("HTTP 503"), std::string::npos)
      << refused.dump();
}

/// The Leases of every holder, by name.
std::set<std::string> holdersOf(const std::map<uint32_t, json>& leases) {
  std::set<std::string> holders;
  for (const auto& [port, lease] : leases) holders.insert(readClaimLease(lease)->holder);
  return holders;
}

TEST_F(ClusterClaimsTest, AClaimWhosePodIsGoneIsReleasedAfterTheGraceAndNotBefore) {
  constexpr auto kGrace = 3s;
  startReplicas(1, agent::core::Strategy::kLowest, 3);
  auto https = client(0);
  const auto started = std::chrono::steady_clock::now();
  for (const char* name : {"live-0", "gone-0", "web-1", "web-5"}) {
    ASSERT_OK_AND_ASSIGN(
        const json answer,
        claim(*https, pod(name, {{"hostport.io/ports", "p=80"}, {"hostport.io/pool", "global"}})));
    ASSERT_EQ(answer["allowed"], true);
  }
  // live-0 exists; web-1 is kept by its StatefulSet (replicas 2); gone-0 and web-5 are orphans.
  api_->putPod("games-eu", "live-0");
  ASSERT_OK(api_->putObject("/apis/apps/v1/namespaces/games-eu/statefulsets/web",
                            {{"apiVersion", "apps/v1"},
                             {"kind", "StatefulSet"},
                             {"metadata", {{"name", "web"}, {"namespace", "games-eu"}}},
                             {"spec", {{"replicas", 2}}}}));
  ASSERT_TRUE(
      test::waitUntil([&] { return holdersOf(leases("global", 50000, 50010)).size() == 2; }, 30s));
  EXPECT_GE(std::chrono::steady_clock::now() - started, kGrace) << "released before the grace";
  EXPECT_EQ(holdersOf(leases("global", 50000, 50010)),
            (std::set<std::string>{"games-eu/live-0", "games-eu/web-1"}));
  EXPECT_TRUE(servers_[0]->repair()->leading());
}

TEST_F(ClusterClaimsTest, ALeaderThatStopsMidRepairHandsOverAndNothingIsReleasedTwiceOrKept) {
  startReplicas(2, agent::core::Strategy::kLowest, 3);
  ASSERT_TRUE(test::waitUntil(
      [&] { return servers_[0]->repair()->leading() || servers_[1]->repair()->leading(); }, 10s));
  const std::size_t leader = servers_[0]->repair()->leading() ? 0 : 1;
  EXPECT_FALSE(servers_[1 - leader]->repair()->leading()) << "one leader at a time";
  auto https = client(1 - leader);
  for (int i = 0; i < 5; ++i) {
    ASSERT_OK_AND_ASSIGN(
        const json answer,
        claim(*https, pod("orphan-" + std::to_string(i),
                          {{"hostport.io/ports", "p=80"}, {"hostport.io/pool", "global"}})));
    ASSERT_EQ(answer["allowed"], true);
  }
  // The leader sees them missing once or twice, then stops; the other replica takes over.
  std::this_thread::sleep_for(1500ms);
  servers_[leader]->stop();
  serving_[leader].join();
  servers_[leader].reset();
  ASSERT_TRUE(test::waitUntil([&] { return servers_[1 - leader]->repair()->leading(); }, 10s));
  // A request's status is recorded once its answer is written: wait for the answers, not only
  // for the store.
  const auto releases = [&] {
    std::size_t deletes = 0;
    for (const auto& request : api_->requests()) {
      if (request.method == "DELETE" && request.status == 200 &&
          request.path.starts_with(std::string(kLeases) + "global.")) {
        ++deletes;
      }
    }
    return deletes;
  };
  ASSERT_TRUE(test::waitUntil([&] { return releases() >= 5; }, 30s));
  EXPECT_TRUE(leases("global", 50000, 50010).empty());
  EXPECT_EQ(releases(), 5u) << "each orphan released once";
}

}  // namespace
}  // namespace hostport::admission
