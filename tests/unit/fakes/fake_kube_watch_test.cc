// The fake API server's lists and watches, read on the wire by the API client's own transport:
// field and label selectors and pages, a DELETE seen by a watch, a watch as HTTP 200 with a chunked
// body of {"type","object"} lines (ADDED, MODIFIED, DELETED as the selector sees the object,
// BOOKMARK when asked), its end after timeoutSeconds, ERROR 410 Expired for a compacted version or
// when the test expires it, and a dropped connection.

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <mutex>
#include <thread>

#include "kube/https_transport.h"
#include "tests/fakes/fake_kube_apiserver.h"
#include "tests/fakes/fake_kube_selection.h"
#include "tests/support/result_assertions.h"
#include "tests/support/wait.h"

namespace hostport::kube {
namespace {

using nlohmann::json;
using namespace std::chrono_literals;
using ::testing::ElementsAre;
using ::testing::HasSubstr;

/// A watch running on a thread of its own, its events collected.
class Watching {
 public:
  Watching(const FakeKubeApiServer& api, std::string target) {
    ClusterConfig config;
    config.host = "127.0.0.1";
    config.port = api.port();
    config.caPem = api.caPem();
    transport_ = std::move(HttpsTransport::create(config).value());
    thread_ = std::thread([this, target = std::move(target), token = api.token()] {
      std::string pending;
      auto answer =
          transport_->stream({"GET", target, "", ""}, token, 5s, 30s, [&](std::string_view data) {
            pending.append(data);
            for (std::size_t nl; (nl = pending.find('\n')) != std::string::npos;) {
              std::lock_guard lock(mutex_);
              events_.push_back(json::parse(pending.substr(0, nl)));
              pending.erase(0, nl + 1);
            }
            return true;
          });
      std::lock_guard lock(mutex_);
      answer_ = std::move(answer);
      done_ = true;
    });
  }
  ~Watching() {
    transport_->cancel();
    thread_.join();
  }

  std::vector<json> events() const {
    std::lock_guard lock(mutex_);
    return events_;
  }
  bool waitForEvents(std::size_t count) const {
    return test::waitUntil([&] { return events().size() >= count; }, 10s);
  }
  /// The stream's end, once it came.
  std::optional<Result<ApiResponse>> end(std::chrono::milliseconds timeout = 10s) const {
    if (!test::waitUntil(
            [&] {
              std::lock_guard lock(mutex_);
              return done_;
            },
            timeout)) {
      return std::nullopt;
    }
    std::lock_guard lock(mutex_);
    return answer_;
  }

 private:
  std::unique_ptr<HttpsTransport> transport_;
  std::thread thread_;
  mutable std::mutex mutex_;
  std::vector<json> events_;
  std::optional<Result<ApiResponse>> answer_;
  bool done_ = false;
};

std::vector<std::string> types(const std::vector<json>& events) {
  std::vector<std::string> out;
  for (const json& event : events) out.push_back(event["type"]);
  return out;
}

class FakeKubeWatchTest : public ::testing::Test {
 protected:
  void SetUp() override {
    auto started = FakeKubeApiServer::start();
    ASSERT_OK(started);
    api_ = std::move(*started);
    ClusterConfig config;
    config.host = "127.0.0.1";
    config.port = api_->port();
    config.caPem = api_->caPem();
    client_ = std::move(HttpsTransport::create(config).value());
  }

  json putPodOn(std::string_view name, std::string_view node) {
    return api_
        ->putObject("/api/v1/namespaces/games/pods/" + std::string(name),
                    {{"apiVersion", "v1"},
                     {"kind", "Pod"},
                     {"spec", {{"nodeName", node}, {"containers", json::array()}}},
                     {"status", {{"phase", "Running"}}}})
        .value();
  }

  Result<ApiResponse> get(const std::string& target) {
    return client_->exchange({"GET", target, "", ""}, api_->token(), 5s);
  }

  std::unique_ptr<FakeKubeApiServer> api_;
  std::unique_ptr<HttpsTransport> client_;
};

TEST_F(FakeKubeWatchTest, ListsByFieldSelectorInPagesAtOneVersion) {
  putPodOn("a-0", "node-a");
  putPodOn("b-0", "node-b");
  putPodOn("a-1", "node-a");
  putPodOn("a-2", "node-a");
  ASSERT_OK_AND_ASSIGN(auto first,
                       get("/api/v1/pods?fieldSelector=spec.nodeName%3Dnode-a&limit=2"));
  ASSERT_EQ(first.status, 200) << first.body;
  const json page = json::parse(first.body);
  EXPECT_EQ(page["kind"], "PodList");
  EXPECT_EQ(page["apiVersion"], "v1");
  ASSERT_EQ(page["items"].size(), 2u);
  EXPECT_EQ(page["items"][0]["metadata"]["name"], "a-0");
  EXPECT_EQ(page["items"][1]["metadata"]["name"], "a-1");
  const std::string version = page["metadata"]["resourceVersion"];
  EXPECT_EQ(version, api_->resourceVersion());
  const std::string next = page["metadata"]["continue"];
  ASSERT_FALSE(next.empty());

  putPodOn("c-0", "node-c");  // the version moves; the continued list keeps the first page's
  ASSERT_OK_AND_ASSIGN(auto second, get("/api/v1/pods?fieldSelector=spec.nodeName%3Dnode-a&limit=2"
                                        "&continue=" +
                                        next));
  const json rest = json::parse(second.body);
  ASSERT_EQ(rest["items"].size(), 1u) << second.body;
  EXPECT_EQ(rest["items"][0]["metadata"]["name"], "a-2");
  EXPECT_FALSE(rest["metadata"].contains("continue"));
  EXPECT_EQ(rest["metadata"]["resourceVersion"], version);

  ASSERT_OK_AND_ASSIGN(auto unknown, get("/api/v1/pods?fieldSelector=spec.image%3Dx"));
  EXPECT_EQ(unknown.status, 400);
  EXPECT_THAT(unknown.body, HasSubstr("field label not supported: spec.image"));
  api_->compact();
  ASSERT_OK_AND_ASSIGN(auto stale, get("/api/v1/pods?limit=2&continue=" + next));
  EXPECT_EQ(stale.status, 410) << stale.body;
  EXPECT_THAT(stale.body, HasSubstr(R"("reason":"Expired")"));
}

TEST(LabelSelectorTest, ReadsEveryOperatorAsTheRealServerDoes) {
  const json labelled = {{"metadata", {{"labels", {{"hostport.io/pool", "games"}, {"tier", ""}}}}}};
  const json bare = {{"metadata", json::object()}};
  const auto matches = [](std::string_view text, const json& object) {
    auto selector = LabelSelector::parse(text);
    EXPECT_TRUE(selector.has_value()) << text;
    return selector && selector->matches(object);
  };
  EXPECT_TRUE(matches("", bare));
  EXPECT_TRUE(matches("hostport.io/pool=games", labelled));
  EXPECT_TRUE(matches("hostport.io/pool==games,tier", labelled));
  EXPECT_TRUE(matches("hostport.io/pool in (media, games)", labelled));
  EXPECT_FALSE(matches("hostport.io/pool notin (games)", labelled));
  EXPECT_TRUE(matches("hostport.io/pool notin (games)", bare)) << "no label: not in any set";
  EXPECT_TRUE(matches("hostport.io/pool!=media", bare));
  EXPECT_FALSE(matches("hostport.io/pool", bare));
  EXPECT_TRUE(matches("!hostport.io/pool", bare));
  EXPECT_FALSE(matches("!tier", labelled));
  EXPECT_TRUE(matches("tier=", labelled)) << "an empty value is a value";
  for (const std::string& bad : std::vector<std::string>{
           "a b=c", "x in games", "=x", "k=v v", "bad key!=x", "k=" + std::string(64, 'v')}) {
    const auto parsed = LabelSelector::parse(bad);
    ASSERT_FALSE(parsed.has_value()) << bad;
    EXPECT_THAT(parsed.error().message, HasSubstr("unable to parse requirement")) << bad;
  }
}

TEST_F(FakeKubeWatchTest, ListsAndWatchesByLabelAndSeesADeleteOverHttp) {
  constexpr std::string_view kLeases = "/apis/coordination.k8s.io/v1/namespaces/hostport/leases";
  const auto lease = [](std::string_view pool) {
    return json({{"apiVersion", "coordination.k8s.io/v1"},
                 {"kind", "Lease"},
                 {"metadata", {{"labels", {{"hostport.io/pool", pool}}}}}});
  };
  ASSERT_OK(api_->putObject(std::string(kLeases) + "/games.40000", lease("games")));
  ASSERT_OK(api_->putObject(std::string(kLeases) + "/media.41000", lease("media")));
  ASSERT_OK_AND_ASSIGN(const auto listed,
                       get(std::string(kLeases) + "?labelSelector=hostport.io%2Fpool%3Dgames"));
  ASSERT_EQ(listed.status, 200u) << listed.body;
  const json items = json::parse(listed.body)["items"];
  ASSERT_EQ(items.size(), 1u);
  EXPECT_EQ(items[0]["metadata"]["name"], "games.40000");
  ASSERT_OK_AND_ASSIGN(const auto bad, get(std::string(kLeases) + "?labelSelector=a%20b"));
  EXPECT_EQ(bad.status, 400u) << bad.body;

  const std::string version = json::parse(listed.body)["metadata"]["resourceVersion"];
  Watching watch(*api_, std::string(kLeases) + "?watch=1&labelSelector=hostport.io%2Fpool%3Dgames" +
                            "&resourceVersion=" + version);
  ASSERT_OK_AND_ASSIGN(
      const auto gone,
      client_->exchange({"DELETE", std::string(kLeases) + "/games.40000", "application/json", ""},
                        api_->token(), 5s));
  EXPECT_EQ(gone.status, 200u) << gone.body;
  ASSERT_OK_AND_ASSIGN(
      const auto other,
      client_->exchange({"DELETE", std::string(kLeases) + "/media.41000", "application/json", ""},
                        api_->token(), 5s));
  EXPECT_EQ(other.status, 200u) << other.body;
  ASSERT_OK(api_->putObject(std::string(kLeases) + "/games.40001", lease("games")));
  ASSERT_TRUE(watch.waitForEvents(2));
  const auto events = watch.events();
  EXPECT_THAT(types(events), ElementsAre("DELETED", "ADDED")) << "the other pool's is not seen";
  EXPECT_EQ(events[0]["object"]["metadata"]["name"], "games.40000");
  EXPECT_EQ(events[1]["object"]["metadata"]["name"], "games.40001");
}

TEST_F(FakeKubeWatchTest, StreamsWhatTheSelectorSeesAsChunkedLinesUntilItsTimeout) {
  putPodOn("a-0", "node-a");
  putPodOn("gone", "node-a");
  const std::string from = api_->resourceVersion();
  Watching watch(*api_,
                 "/api/v1/pods?watch=true&allowWatchBookmarks=true&timeoutSeconds=300"
                 "&fieldSelector=spec.nodeName%3Dnode-a&resourceVersion=" +
                     from);
  ASSERT_TRUE(test::waitUntil([&] { return api_->openWatches() == 1; }, 10s));
  putPodOn("a-1", "node-a");                                 // ADDED
  putPodOn("b-0", "node-b");                                 // not selected: nothing
  putPodOn("a-1", "node-a");                                 // MODIFIED
  putPodOn("a-0", "node-b");                                 // moved out: DELETED
  api_->deleteObject("/api/v1/namespaces/games/pods/gone");  // DELETED
  api_->sendBookmarks();
  ASSERT_TRUE(watch.waitForEvents(5));
  const std::vector<json> events = watch.events();
  EXPECT_THAT(types(events), ElementsAre("ADDED", "MODIFIED", "DELETED", "DELETED", "BOOKMARK"));
  EXPECT_EQ(events[0]["object"]["metadata"]["name"], "a-1");
  EXPECT_EQ(events[2]["object"]["metadata"]["name"], "a-0");
  EXPECT_EQ(events[2]["object"]["spec"]["nodeName"], "node-b") << "its new state";
  EXPECT_EQ(events[3]["object"]["metadata"]["name"], "gone");
  EXPECT_EQ(events[4]["object"]["metadata"]["resourceVersion"], api_->resourceVersion());
  EXPECT_EQ(events[4]["object"]["kind"], "Pod");
  // Each event's version is newer than the one before.
  for (std::size_t i = 1; i < 4; ++i) {
    EXPECT_LT(
        std::stoull(events[i - 1]["object"]["metadata"]["resourceVersion"].get<std::string>()),
        std::stoull(events[i]["object"]["metadata"]["resourceVersion"].get<std::string>()));
  }
  // A watch of one second ends by itself, as a chunked body's last chunk.
  Watching brief(
      *api_, "/api/v1/pods?watch=true&timeoutSeconds=1&resourceVersion=" + api_->resourceVersion());
  const auto end = brief.end();
  ASSERT_TRUE(end.has_value()) << "the stream ends after timeoutSeconds";
  ASSERT_OK(*end);
  EXPECT_EQ((*end)->status, 200);
  EXPECT_EQ((*end)->headers.at("transfer-encoding"), "chunked");
}

TEST_F(FakeKubeWatchTest, AVersionOlderThanTheHistoryIsOneError410) {
  putPodOn("a-0", "node-a");
  const std::string old = api_->resourceVersion();
  putPodOn("a-0", "node-a");
  api_->compact();
  Watching watch(*api_, "/api/v1/pods?watch=true&resourceVersion=" + old);
  ASSERT_TRUE(watch.waitForEvents(1));
  const json error = watch.events()[0];
  EXPECT_EQ(error["type"], "ERROR");
  EXPECT_EQ(error["object"]["code"], 410);
  EXPECT_EQ(error["object"]["reason"], "Expired");
  EXPECT_THAT(error["object"]["message"].get<std::string>(), HasSubstr("too old resource version"));
  const auto end = watch.end();
  ASSERT_TRUE(end.has_value());
  ASSERT_OK(*end);  // the stream ended, as the real server ends it
}

TEST_F(FakeKubeWatchTest, ExpiredWatchesGetError410AndDroppedOnesLoseTheirConnection) {
  const std::string now = api_->resourceVersion();
  Watching expiring(*api_, "/api/v1/pods?watch=true&resourceVersion=" + now);
  ASSERT_TRUE(test::waitUntil([&] { return api_->openWatches() == 1; }, 10s));
  api_->expireWatches();
  ASSERT_TRUE(expiring.waitForEvents(1));
  EXPECT_EQ(expiring.events()[0]["object"]["code"], 410);
  ASSERT_TRUE(expiring.end().has_value());

  Watching dropped(*api_, "/api/v1/pods?watch=true&resourceVersion=" + now);
  ASSERT_TRUE(test::waitUntil([&] { return api_->openWatches() == 1; }, 10s));
  api_->dropWatches();
  const auto end = dropped.end();
  ASSERT_TRUE(end.has_value());
  EXPECT_FALSE(end->has_value()) << "a cut connection is no end of the body";
}

}  // namespace
}  // namespace hostport::kube
