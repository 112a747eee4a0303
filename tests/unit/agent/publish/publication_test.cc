// What the agent publishes on a pod and when: the patch's shape (docs/annotations.md) and the
// outbox's rules (one publication per pod, its interfaces merged and its older sandbox left out;
// delivered once, dropped for good on 404/409/422, retried otherwise, never after a release,
// still owed after a restart).

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <deque>
#include <fstream>
#include <nlohmann/json.hpp>
#include <thread>

#include "agent/publish/pod_publication.h"
#include "agent/publish/publisher.h"
#include "tests/support/result_assertions.h"
#include "tests/support/temp_dir.h"
#include "tests/support/wait.h"

namespace hostport::agent::publish {
namespace {

using namespace std::chrono_literals;
using ::testing::ElementsAre;

Lease leaseOf(const std::string& container, const std::string& podName, const std::string& uid,
              uint16_t webPort) {
  Lease lease;
  lease.key = {container, "eth0"};
  lease.pod = {"games", podName, uid};
  lease.pool = "default";
  lease.ports.push_back({"web", PortProtocol::kTcp, webPort, 8080, 1, std::nullopt, false});
  lease.ports.push_back({"rtp", PortProtocol::kUdp, 20000, 5000, 10, std::nullopt, false});
  lease.ports.push_back({"", PortProtocol::kTcp, 8443, 443, 1, std::nullopt, true});  // static
  return lease;
}

TEST(PodPublicationTest, PatchCarriesTheUidTheAssignedObjectAndOneAnnotationPerPort) {
  const auto patch =
      nlohmann::json::parse(publicationPatch({{leaseOf("c1", "gs-0", "u-1", 30001)}}, "node-1"));
  EXPECT_EQ(patch["metadata"]["uid"], "u-1");
  const auto& annotations = patch["metadata"]["annotations"];
  EXPECT_EQ(annotations["hostport.io/allocated-web"], "30001");
  EXPECT_EQ(annotations["hostport.io/allocated-rtp"], "20000-20009");
  EXPECT_EQ(annotations.size(), 3u) << "the static port is in the pod spec already";
  const auto assigned =
      nlohmann::json::parse(annotations["hostport.io/assigned"].get<std::string>());
  EXPECT_EQ(assigned, nlohmann::json::parse(R"({"node":"node-1","ports":{
      "web":{"hostPort":30001,"protocol":"tcp","containerPort":8080},
      "rtp":{"hostPort":20000,"protocol":"udp","containerPort":5000,"count":10}}})"));
}

TEST(PodPublicationTest, NothingToPublishWithoutANamedPortOrAPodToAimAt) {
  Lease staticOnly = leaseOf("c1", "gs-0", "u-1", 30001);
  staticOnly.ports.erase(staticOnly.ports.begin(), staticOnly.ports.begin() + 2);
  EXPECT_EQ(publicationPatch({{staticOnly}}, "n"), "");
  Lease noUid = leaseOf("c1", "gs-0", "", 30001);
  EXPECT_EQ(publicationPatch({{noUid}}, "n"), "")
      << "without a UID the patch could hit another pod";
  EXPECT_EQ(podPath(noUid.pod), "/api/v1/namespaces/games/pods/gs-0");
}

TEST(PodPublicationTest, APodsInterfacesAreOnePublicationLedByEth0) {
  Lease eth0 = leaseOf("c1", "gs-0", "u-1", 30001);
  Lease net1 = leaseOf("c1", "gs-0", "u-1", 30002);
  net1.key.ifname = "net1";
  net1.ports[1].name = "media";  // a name only net1 has
  // Given in any order, eth0 leads.
  const auto patch = nlohmann::json::parse(publicationPatch({{net1, eth0}}, "node-1"));
  const auto& annotations = patch["metadata"]["annotations"];
  EXPECT_EQ(annotations["hostport.io/allocated-web"], "30001");
  EXPECT_EQ(annotations["hostport.io/allocated-media"], "20000-20009");
  const auto assigned =
      nlohmann::json::parse(annotations["hostport.io/assigned"].get<std::string>());
  EXPECT_EQ(assigned["ports"]["web"]["hostPort"], 30001);
  EXPECT_EQ(assigned["interfaces"]["eth0"]["web"]["hostPort"], 30001);
  EXPECT_EQ(assigned["interfaces"]["net1"]["web"]["hostPort"], 30002);
  EXPECT_TRUE(assigned["interfaces"]["net1"].contains("media"));
  EXPECT_FALSE(assigned["interfaces"]["eth0"].contains("media"));
  // One interface: no "interfaces", as before.
  EXPECT_FALSE(nlohmann::json::parse(
                   nlohmann::json::parse(publicationPatch(
                       {{eth0}}, "node-1"))["metadata"]["annotations"]["hostport.io/assigned"]
                       .get<std::string>())
                   .contains("interfaces"));
}

/// An API server stand-in for the sender: answers from a script, records what it got.
class ScriptedServer {
 public:
  Publisher::Sender sender() {
    return [this](const kube::ApiRequest& request) -> Result<int> {
      std::lock_guard lock(mutex_);
      sent_.push_back({request.target, request.body});
      methods_.push_back(request.method);
      if (script_.empty()) return 200;
      const int status = script_.front();
      script_.pop_front();
      if (status == 0) return fail(ErrorCode::kUnavailable, "connection refused");
      return status;
    };
  }
  void answer(std::initializer_list<int> statuses) {
    std::lock_guard lock(mutex_);
    script_.insert(script_.end(), statuses);
  }
  std::vector<std::pair<std::string, std::string>> sent() {
    std::lock_guard lock(mutex_);
    return sent_;
  }
  std::vector<std::string> methods() {
    std::lock_guard lock(mutex_);
    return methods_;
  }

 private:
  std::mutex mutex_;
  std::vector<std::string> methods_;
  std::deque<int> script_;  // 0: no answer
  std::vector<std::pair<std::string, std::string>> sent_;
};

/// Up to 5 s, as these tests have always waited.
bool eventually(const std::function<bool()>& condition) { return test::waitUntil(condition, 5s); }

class PublisherTest : public ::testing::Test {
 protected:
  PublisherOptions options(std::chrono::milliseconds settle = 10ms) const {
    return {"node-1", dir_.path(), 50ms, 10ms, settle};
  }
  test::TempDir dir_;
  ScriptedServer server_;
};

TEST_F(PublisherTest, DeliversAGrantOnceAndRemembersItAcrossARestart) {
  const Lease lease = leaseOf("c1", "gs-0", "u-1", 30001);
  {
    Publisher publisher(options(), server_.sender());
    publisher.recover({});
    publisher.start();
    publisher.granted(lease);
    ASSERT_TRUE(eventually([&] { return publisher.counts().delivered == 1; }));
    EXPECT_THAT(server_.sent(),
                ElementsAre(std::pair{std::string("/api/v1/namespaces/games/pods/gs-0"),
                                      publicationPatch({{lease}}, "node-1")}));
  }
  Publisher restarted(options(), server_.sender());
  restarted.recover({lease});
  EXPECT_EQ(restarted.counts().pending, 0u) << "delivered before the restart";
  Lease moved = lease;
  moved.ports[0].hostPort = 30002;
  Publisher again(options(), server_.sender());
  again.recover({moved});
  EXPECT_EQ(again.counts().pending, 1u) << "a lease whose patch changed is owed again";
}

TEST_F(PublisherTest, AnUndeliveredPublicationIsStillOwedAfterARestart) {
  const Lease lease = leaseOf("c1", "gs-0", "u-1", 30001);
  {
    Publisher publisher(options(), server_.sender());
    publisher.recover({});
    publisher.granted(lease);  // never started: the agent died before the thread sent it
  }
  Publisher restarted(options(), server_.sender());
  restarted.recover({lease});
  restarted.start();
  ASSERT_TRUE(eventually([&] { return restarted.counts().delivered == 1; }));
}

TEST_F(PublisherTest, AnotherPodOfTheSameNameDropsThePublicationForGood) {
  server_.answer({409});
  const Lease lease = leaseOf("c1", "gs-0", "u-old", 30001);
  {
    Publisher publisher(options(), server_.sender());
    publisher.recover({});
    publisher.start();
    publisher.granted(lease);
    ASSERT_TRUE(eventually([&] { return publisher.counts().dropped.count("uid_mismatch") == 1; }));
    std::this_thread::sleep_for(150ms);  // longer than the retry delay: no retry comes
    EXPECT_EQ(server_.sent().size(), 1u);
  }
  Publisher restarted(options(), server_.sender());
  restarted.recover({lease});
  EXPECT_EQ(restarted.counts().pending, 0u) << "moot, not owed again";
}

TEST_F(PublisherTest, FailuresAreTriedAgainUntilDelivered) {
  server_.answer({0, 503, 401});
  Publisher publisher(options(), server_.sender());
  publisher.recover({});
  publisher.start();
  publisher.granted(leaseOf("c1", "gs-0", "u-1", 30001));
  ASSERT_TRUE(eventually([&] { return publisher.counts().delivered == 1; }));
  const auto counts = publisher.counts();
  EXPECT_EQ(counts.failed.at("unavailable"), 1u);
  EXPECT_EQ(counts.failed.at("status_503"), 1u);
  EXPECT_EQ(counts.failed.at("status_401"), 1u);
  EXPECT_EQ(server_.sent().size(), 4u);
  prometheus::TextWriter metrics;
  publisher.writeMetrics(metrics);
  EXPECT_THAT(metrics.text(), ::testing::HasSubstr("hostport_publications_done_total 1"));
}

TEST_F(PublisherTest, AReleasedLeasePublishesNothingFurther) {
  server_.answer({0});
  Publisher publisher(options(), server_.sender());
  publisher.recover({});
  publisher.start();
  const Lease lease = leaseOf("c1", "gs-0", "u-1", 30001);
  publisher.granted(lease);
  ASSERT_TRUE(eventually([&] { return publisher.counts().failed.size() == 1; }));
  publisher.released(lease);
  std::this_thread::sleep_for(150ms);  // past the retry
  EXPECT_EQ(server_.sent().size(), 1u);
  EXPECT_EQ(publisher.counts().pending, 0u);
}

TEST_F(PublisherTest, APodsInterfacesGrantedTogetherArePublishedOnceWithBoth) {
  Publisher publisher(options(300ms), server_.sender());
  publisher.recover({});
  publisher.start();
  const Lease eth0 = leaseOf("c1", "gs-0", "u-1", 30001);
  Lease net1 = leaseOf("c1", "gs-0", "u-1", 30002);
  net1.key.ifname = "net1";
  publisher.granted(eth0);
  publisher.granted(net1);
  ASSERT_TRUE(eventually([&] { return publisher.counts().delivered == 1; }));
  std::this_thread::sleep_for(100ms);
  const auto sent = server_.sent();
  ASSERT_EQ(sent.size(), 1u);
  EXPECT_EQ(sent[0].second, publicationPatch({{eth0, net1}}, "node-1"));
  // The same grants again (a hostNetwork pod's re-lease, an ADD retried): nothing to send.
  publisher.granted(eth0);
  std::this_thread::sleep_for(400ms);
  EXPECT_EQ(server_.sent().size(), 1u);
  EXPECT_EQ(publisher.counts().pending, 0u);
}

TEST_F(PublisherTest, ANewSandboxIsPublishedAloneWhileTheOldOnesLeaseLingers) {
  Publisher publisher(options(), server_.sender());
  publisher.recover({});
  publisher.start();
  const Lease old = leaseOf("sandbox-1", "gs-0", "u-1", 30001);
  const Lease fresh = leaseOf("sandbox-2", "gs-0", "u-1", 30002);
  publisher.granted(old);
  ASSERT_TRUE(eventually([&] { return publisher.counts().delivered == 1; }));
  publisher.granted(fresh);  // its DEL missed, the old sandbox's lease is still held
  ASSERT_TRUE(eventually([&] { return publisher.counts().delivered == 2; }));
  EXPECT_EQ(server_.sent().back().second, publicationPatch({{fresh}}, "node-1"));
  publisher.released(old);  // the vanished pass, later: nothing to send
  std::this_thread::sleep_for(100ms);
  EXPECT_EQ(server_.sent().size(), 2u);
}

TEST_F(PublisherTest, AfterARestartAPodWithTwoSandboxesKeepsTheOnePublished) {
  const Lease old = leaseOf("sandbox-1", "gs-0", "u-1", 30001);
  const Lease fresh = leaseOf("sandbox-2", "gs-0", "u-1", 30002);
  {
    Publisher publisher(options(), server_.sender());
    publisher.recover({});
    publisher.start();
    publisher.granted(old);
    publisher.granted(fresh);
    ASSERT_TRUE(eventually([&] { return publisher.counts().delivered == 1; }));
  }
  Publisher restarted(options(), server_.sender());
  restarted.recover({old, fresh});
  EXPECT_EQ(restarted.counts().pending, 0u) << "sandbox-2's publication is the one delivered";
  restarted.start();
  restarted.released(fresh);
  restarted.released(old);
  std::this_thread::sleep_for(100ms);
  EXPECT_EQ(server_.sent().size(), 1u);
}

TEST_F(PublisherTest, ARecordOfTheFirstVersionHasEveryPodPublishedAgain) {
  const Lease lease = leaseOf("c1", "gs-0", "u-1", 30001);
  {
    std::ofstream record(dir_ / "published.json");
    record << R"({"version":1,"published":{"c1/eth0":")"
           << patchDigest(publicationPatch({{lease}}, "node-1")) << R"("}})";
  }
  Publisher publisher(options(), server_.sender());
  publisher.recover({lease});
  EXPECT_EQ(publisher.counts().pending, 1u);
}

TEST(PodEventTest, AWarningIsAnEventAboutThePodAsTheKubeletsRecorderWritesOne) {
  const PodWarning warning{{"games", "gs-0", "u-1"}, std::string(kPortsNotGranted), "no free port"};
  const auto now = std::chrono::system_clock::time_point(std::chrono::seconds(1'800'000'000));
  const auto event = podEvent(warning, "node-1", now);
  EXPECT_EQ(event["metadata"]["name"], "gs-0.18fae27693b40000");
  EXPECT_EQ(event["metadata"]["namespace"], "games");
  EXPECT_EQ(event["involvedObject"], nlohmann::json::parse(R"({"apiVersion":"v1","kind":"Pod",
      "namespace":"games","name":"gs-0","uid":"u-1"})"));
  EXPECT_EQ(event["type"], "Warning");
  EXPECT_EQ(event["reason"], "HostPortsNotGranted");
  EXPECT_EQ(event["message"], "no free port");
  EXPECT_EQ(event["source"]["host"], "node-1");
  EXPECT_EQ(event["firstTimestamp"], "2027-01-15T08:00:00Z");
  EXPECT_EQ(eventsPath("games"), "/api/v1/namespaces/games/events");
}

TEST_F(PublisherTest, AWarningIsPostedOnceAndTriedAgainOnlyWhileItMayStillGoThrough) {
  server_.answer({503, 201, 403});
  Publisher publisher(options(), server_.sender());
  publisher.recover({});
  publisher.start();
  publisher.warn({{"games", "gs-0", "u-1"}, std::string(kPortsNotRequested), "asks 3, requests 1"});
  ASSERT_TRUE(eventually([&] { return publisher.counts().events["sent"] == 1; }));
  publisher.warn({{"games", "gs-1", "u-2"}, std::string(kPortsNotRequested), "asks 2, requests 0"});
  ASSERT_TRUE(eventually([&] { return publisher.counts().events["failed"] == 1; }));
  std::this_thread::sleep_for(100ms);  // past the retry delay: a 403 is not tried again
  const auto sent = server_.sent();
  ASSERT_EQ(sent.size(), 3u);
  EXPECT_EQ(sent[0].first, "/api/v1/namespaces/games/events");
  EXPECT_EQ(server_.methods()[0], "POST");
  EXPECT_EQ(nlohmann::json::parse(sent[1].second)["message"], "asks 3, requests 1");
  prometheus::TextWriter metrics;
  publisher.writeMetrics(metrics);
  EXPECT_THAT(metrics.text(),
              ::testing::HasSubstr("hostport_pod_events_total{outcome=\"sent\"} 1"));
}

TEST_F(PublisherTest, AFullQueueOfWarningsDropsTheOldest) {
  Publisher publisher(options(), server_.sender());  // never started: nothing is sent
  for (std::size_t i = 0; i < kMaxQueuedEvents + 2; ++i) {
    publisher.warn({{"games", "gs-" + std::to_string(i), "u"}, "R", "m"});
  }
  EXPECT_EQ(publisher.counts().events["dropped"], 2u);
}

TEST(PodPublicationTest, NodeCapacityIsOneExtendedResourcePerPoolInCapacityAndAllocatable) {
  const auto patch = nlohmann::json::parse(nodeCapacityPatch({{"default", 2768}, {"games", 10}}));
  const auto expected =
      nlohmann::json::parse(R"({"hostport.io/default":"2768","hostport.io/games":"10"})");
  EXPECT_EQ(patch["status"]["capacity"], expected);
  EXPECT_EQ(patch["status"]["allocatable"], expected);
  EXPECT_EQ(nodeStatusPath("node-1"), "/api/v1/nodes/node-1/status");
}

TEST_F(PublisherTest, PatchesTheNodeWhenTheCapacityChangesAndRetriesAFailure) {
  server_.answer({500});
  Publisher publisher(options(), server_.sender());
  publisher.recover({});
  publisher.start();
  publisher.nodeCapacity({{"default", 10}});
  ASSERT_TRUE(eventually([&] { return publisher.counts().capacityPatches == 1; }));
  publisher.nodeCapacity({{"default", 10}});  // unchanged: nothing sent
  publisher.nodeCapacity({{"default", 9}});
  ASSERT_TRUE(eventually([&] { return publisher.counts().capacityPatches == 2; }));
  const auto sent = server_.sent();
  ASSERT_EQ(sent.size(), 3u);  // the failed one, then 10, then 9
  EXPECT_EQ(sent[1].first, "/api/v1/nodes/node-1/status");
  EXPECT_EQ(sent[2].second, nodeCapacityPatch({{"default", 9}}));
  publisher.nodeCapacity({{"default", 9}}, /*resend=*/true);  // the backstop
  ASSERT_TRUE(eventually([&] { return publisher.counts().capacityPatches == 3; }));
}

}  // namespace
}  // namespace hostport::agent::publish
