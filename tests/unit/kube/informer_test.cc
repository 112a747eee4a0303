// The informer against the fake API server (its lists and watches on the real wire format): a
// list then a stream, a dropped connection resumed from the last version without a list, a 410
// answered by a list with nothing lost or doubled, bookmarks moving the version, a flood of 5,000
// events, and a prompt stop.

#include "kube/informer.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <map>
#include <mutex>
#include <set>
#include <thread>

#include "tests/fakes/fake_kube_apiserver.h"
#include "tests/support/result_assertions.h"
#include "tests/support/temp_dir.h"
#include "tests/support/wait.h"

namespace hostport::kube {
namespace {

using nlohmann::json;
using namespace std::chrono_literals;
using ::testing::HasSubstr;

constexpr std::string_view kPods = "/api/v1/namespaces/games/pods/";

std::uint64_t versionOf(const json& object) {
  return std::stoull(object["metadata"]["resourceVersion"].get<std::string>());
}

/// What the owner of an informer keeps: the objects by name, and what it was told.
struct View {
  mutable std::mutex mutex;
  std::map<std::string, json> objects;
  std::vector<InformerNote> notes;
  std::size_t replaces = 0;
  // Every event applied, with the version of the list before it.
  struct Applied {
    WatchEventType type;
    std::string name;
    std::uint64_t version;
    std::uint64_t listVersion;
  };
  std::vector<Applied> applied;
  std::uint64_t listVersion = 0;

  InformerHandlers handlers() {
    return {[this](std::vector<json> items) {
              std::lock_guard lock(mutex);
              objects.clear();
              for (json& item : items) {
                const std::string name = item["metadata"]["name"];
                objects[name] = std::move(item);  // json's operator= takes its argument by value
              }
              ++replaces;
            },
            [this](WatchEventType type, json object) {
              std::lock_guard lock(mutex);
              const std::string name = object["metadata"]["name"];
              applied.push_back({type, name, versionOf(object), listVersion});
              if (type == WatchEventType::kDeleted) {
                objects.erase(name);
              } else {
                objects[name] = std::move(object);
              }
            },
            [this](const InformerNote& note) {
              std::lock_guard lock(mutex);
              if (note.kind == InformerNote::Kind::kListed) {
                listVersion = std::stoull(note.resourceVersion);
              }
              notes.push_back(note);
            }};
  }
  std::set<std::string> names() const {
    std::lock_guard lock(mutex);
    std::set<std::string> out;
    for (const auto& [name, object] : objects) out.insert(name);
    return out;
  }
  std::size_t count(InformerNote::Kind kind) const {
    std::lock_guard lock(mutex);
    return static_cast<std::size_t>(
        std::count_if(notes.begin(), notes.end(), [&](const auto& n) { return n.kind == kind; }));
  }
};

class InformerTest : public ::testing::Test {
 protected:
  void SetUp() override {
    auto started = FakeKubeApiServer::start();
    ASSERT_OK(started);
    api_ = std::move(*started);
    for (const char* name : {"a-0", "a-1", "a-2"}) putPodOn(name, "node-a");
    putPodOn("b-0", "node-b");
  }

  void TearDown() override { stop(); }

  json putPodOn(std::string_view name, std::string_view node, std::string_view image = "v1") {
    return api_
        ->putObject(
            std::string(kPods) + std::string(name),
            {{"apiVersion", "v1"},
             {"kind", "Pod"},
             {"spec", {{"nodeName", node}, {"containers", {{{"name", "app"}, {"image", image}}}}}}})
        .value();
  }

  /// With `options.backoff` made short for the tests, unless `backoff` says otherwise.
  void start(InformerOptions options = {}, std::optional<BackoffPolicy> backoff = std::nullopt) {
    auto path = api_->writeKubeconfig(dir_.path());
    ASSERT_OK(path);
    auto config = loadKubeconfig(path->string());
    ASSERT_OK(config);
    KubeClientOptions clientOptions;
    clientOptions.qps = 1000;
    clientOptions.burst = 1000;
    auto client =
        KubeClient::create(*config, clientOptions, [](KubeClient::Clock::time_point until) {
          std::this_thread::sleep_until(until);
          return true;
        });
    ASSERT_OK(client);
    client_ = std::move(*client);
    options.collection = "/api/v1/pods";
    options.fieldSelector = "spec.nodeName=node-a";
    options.backoff = backoff.value_or(BackoffPolicy{10ms, 100ms, 2.0});
    informer_ = std::make_unique<Informer>(*client_, options, view_.handlers());
    thread_ = std::thread([this] { informer_->run(); });
  }

  void stop() {
    if (informer_) informer_->stop();
    if (thread_.joinable()) thread_.join();
  }

  /// Requests of the collection: lists (no watch=) and watches.
  std::pair<std::size_t, std::size_t> listsAndWatches() const {
    std::size_t lists = 0;
    std::size_t watches = 0;
    for (const FakeKubeRequest& request : api_->requests()) {
      if (request.path != "/api/v1/pods") continue;
      (request.target.find("watch=true") != std::string::npos ? watches : lists)++;
    }
    return {lists, watches};
  }

  bool waitForNames(const std::set<std::string>& names) {
    return test::waitUntil([&] { return view_.names() == names; }, 10s);
  }

  std::unique_ptr<FakeKubeApiServer> api_;
  test::TempDir dir_;
  std::unique_ptr<KubeClient> client_;
  View view_;
  std::unique_ptr<Informer> informer_;
  std::thread thread_;
};

TEST_F(InformerTest, ListsThenWatchesWhatTheSelectorSees) {
  start();
  ASSERT_TRUE(waitForNames({"a-0", "a-1", "a-2"}));
  ASSERT_TRUE(test::waitUntil([&] { return api_->openWatches() == 1; }, 10s));
  putPodOn("a-3", "node-a");
  putPodOn("a-1", "node-a", "v2");
  api_->deleteObject(std::string(kPods) + "a-0");
  putPodOn("a-2", "node-b");  // moved away: gone from this node's view
  ASSERT_TRUE(waitForNames({"a-1", "a-3"}));
  EXPECT_TRUE(test::waitUntil(
      [&] {
        std::lock_guard lock(view_.mutex);
        return view_.objects["a-1"]["spec"]["containers"][0]["image"] == "v2";
      },
      10s));
  // The informer keeps an event's version after its handler has run: wait for it too.
  EXPECT_TRUE(
      test::waitUntil([&] { return informer_->resourceVersion() == api_->resourceVersion(); }, 10s))
      << informer_->resourceVersion() << " != " << api_->resourceVersion();
  const auto [lists, watches] = listsAndWatches();
  EXPECT_EQ(lists, 1u);
  EXPECT_EQ(watches, 1u);
  const FakeKubeRequest watch = api_->requests().back();
  EXPECT_THAT(watch.target, HasSubstr("allowWatchBookmarks=true"));
  EXPECT_THAT(watch.target, HasSubstr("fieldSelector=spec.nodeName%3Dnode-a"));
  EXPECT_THAT(watch.target, HasSubstr("timeoutSeconds="));
}

TEST_F(InformerTest, ADroppedConnectionResumesFromTheLastVersionWithoutAList) {
  start();
  ASSERT_TRUE(waitForNames({"a-0", "a-1", "a-2"}));
  ASSERT_TRUE(test::waitUntil([&] { return api_->openWatches() == 1; }, 10s));
  putPodOn("a-3", "node-a");
  ASSERT_TRUE(waitForNames({"a-0", "a-1", "a-2", "a-3"}));
  // The version is kept after the handler ran: wait for it, then read it.
  ASSERT_TRUE(test::waitUntil(
      [&] { return informer_->resourceVersion() == api_->resourceVersion(); }, 10s));
  const std::string seen = informer_->resourceVersion();
  api_->dropWatches();
  putPodOn("a-4", "node-a");  // while no watch is open: the resumed one brings it
  ASSERT_TRUE(waitForNames({"a-0", "a-1", "a-2", "a-3", "a-4"}));
  const auto [lists, watches] = listsAndWatches();
  EXPECT_EQ(lists, 1u) << "no list after a dropped connection";
  EXPECT_EQ(watches, 2u);
  EXPECT_THAT(api_->requests().back().target, HasSubstr("resourceVersion=" + seen));
  EXPECT_EQ(view_.count(InformerNote::Kind::kFailed), 1u);
  EXPECT_EQ(view_.replaces, 1u);
}

TEST_F(InformerTest, A410IsAnsweredByAListWithNothingLostOrDoubled) {
  start();
  ASSERT_TRUE(waitForNames({"a-0", "a-1", "a-2"}));
  ASSERT_TRUE(test::waitUntil([&] { return api_->openWatches() == 1; }, 10s));
  // The watch is cut and kept from coming back while changes happen and the history that held
  // them is compacted away: the resumed watch is told 410, and a list brings the changes.
  api_->injectFault(FakeKubeFault::answer(503).on("/api/v1/pods").repeated(1000));
  api_->dropWatches();
  api_->deleteObject(std::string(kPods) + "a-0");
  putPodOn("a-5", "node-a");
  api_->compact();
  api_->clearFaults();
  ASSERT_TRUE(waitForNames({"a-1", "a-2", "a-5"}));
  EXPECT_EQ(view_.count(InformerNote::Kind::kExpired), 1u);
  ASSERT_TRUE(test::waitUntil([&] { return api_->openWatches() == 1; }, 10s));
  putPodOn("a-6", "node-a");
  ASSERT_TRUE(waitForNames({"a-1", "a-2", "a-5", "a-6"}));
  // An open watch the server expires (its watch cache no longer holds the version): a list too.
  putPodOn("a-7", "node-a");
  api_->compact();
  api_->expireWatches();
  ASSERT_TRUE(waitForNames({"a-1", "a-2", "a-5", "a-6", "a-7"}));
  ASSERT_TRUE(test::waitUntil(
      [&] {
        std::lock_guard lock(view_.mutex);
        return view_.replaces == 3;
      },
      10s));
  EXPECT_EQ(view_.count(InformerNote::Kind::kExpired), 2u);
  std::lock_guard lock(view_.mutex);
  for (const View::Applied& event : view_.applied) {
    EXPECT_GT(event.version, event.listVersion) << event.name << ": applied again after its list";
  }
}

TEST_F(InformerTest, BookmarksMoveTheVersionWithoutAnEvent) {
  start();
  ASSERT_TRUE(waitForNames({"a-0", "a-1", "a-2"}));
  ASSERT_TRUE(test::waitUntil([&] { return api_->openWatches() == 1; }, 10s));
  const std::string listed = informer_->resourceVersion();
  putPodOn("b-1", "node-b");  // another node's: the version moves, this watch sees nothing
  api_->sendBookmarks();
  ASSERT_TRUE(test::waitUntil(
      [&] { return informer_->resourceVersion() == api_->resourceVersion(); }, 10s));
  EXPECT_NE(informer_->resourceVersion(), listed);
  std::lock_guard lock(view_.mutex);
  EXPECT_TRUE(view_.applied.empty());
}

TEST_F(InformerTest, FiveThousandEventsEndInTheServersState) {
  start();
  ASSERT_TRUE(waitForNames({"a-0", "a-1", "a-2"}));
  ASSERT_TRUE(test::waitUntil([&] { return api_->openWatches() == 1; }, 10s));
  // 1,000 pods created, each changed three times, every other one deleted: 4,500 events here,
  // plus 500 moved to another node (DELETED for this one).
  std::set<std::string> expected = {"a-0", "a-1", "a-2"};
  for (int i = 0; i < 1000; ++i) {
    const std::string name = "flood-" + std::to_string(i);
    for (int change = 0; change < 4; ++change) putPodOn(name, "node-a", std::to_string(change));
    if (i % 2 == 0) {
      api_->deleteObject(std::string(kPods) + name);
    } else {
      putPodOn(name, "node-c");
    }
  }
  for (int i = 0; i < 500; ++i) {
    const std::string name = "stay-" + std::to_string(i);
    putPodOn(name, "node-a");
    expected.insert(name);
  }
  // The deadline only ends a broken run: under ASan on a loaded 2-core machine the stream takes
  // up to a minute (7 s alone).
  ASSERT_TRUE(test::waitUntil([&] { return view_.names() == expected; }, 120s))
      << view_.names().size() << " objects in view";
  prometheus::TextWriter out;
  informer_->writeMetrics(out);
  EXPECT_THAT(
      out.text(),
      HasSubstr(
          R"(hostport_kube_watch_events_total{collection="/api/v1/pods",type="ADDED"} 1500)"));
  EXPECT_THAT(
      out.text(),
      HasSubstr(
          R"(hostport_kube_watch_events_total{collection="/api/v1/pods",type="MODIFIED"} 3000)"));
  EXPECT_THAT(
      out.text(),
      HasSubstr(
          R"(hostport_kube_watch_events_total{collection="/api/v1/pods",type="DELETED"} 1000)"));
  EXPECT_THAT(out.text(),
              HasSubstr(R"(hostport_kube_watch_lists_total{collection="/api/v1/pods"} 1)"));
}

TEST_F(InformerTest, StopEndsARunningWatchAtOnce) {
  start();
  ASSERT_TRUE(test::waitUntil([&] { return api_->openWatches() == 1; }, 10s));
  const auto before = std::chrono::steady_clock::now();
  stop();
  EXPECT_LT(std::chrono::steady_clock::now() - before, 2s);
}

TEST_F(InformerTest, AnApiServerRefusingTheListIsRetriedWithBackoff) {
  api_->injectFault(FakeKubeFault::answer(403).on("/api/v1/pods").repeated(2));
  start();
  ASSERT_TRUE(waitForNames({"a-0", "a-1", "a-2"}));
  EXPECT_EQ(view_.count(InformerNote::Kind::kFailed), 2u);
  // Each try is told as it starts: what a list brings is the collection as of then, or later.
  EXPECT_EQ(view_.count(InformerNote::Kind::kListing), 3u);
  std::lock_guard lock(view_.mutex);
  ASSERT_EQ(view_.notes.front().kind, InformerNote::Kind::kListing);
  const auto failed =
      std::ranges::find(view_.notes, InformerNote::Kind::kFailed, &InformerNote::kind);
  ASSERT_NE(failed, view_.notes.end());
  EXPECT_THAT(failed->cause, HasSubstr("HTTP 403"));
}

TEST_F(InformerTest, WatchesAServerEndsAtOnceAreResumedWithBackoffNotInAHotLoop) {
  InformerOptions options;
  options.watchTimeout = 0s;  // the fake ends each watch as it starts, with nothing in it
  start(options, BackoffPolicy{400ms, 800ms, 2.0});
  ASSERT_TRUE(waitForNames({"a-0", "a-1", "a-2"}));
  std::this_thread::sleep_for(1s);
  // Backed off by up to 400 ms, then 800 (full jitter): about three in that second. Resumed at
  // once, each as soon as the last ended: over twenty here.
  EXPECT_LE(listsAndWatches().second, 12u);
  EXPECT_GE(listsAndWatches().second, 2u);
  EXPECT_EQ(listsAndWatches().first, 1u) << "resumed, never listed again";
}

}  // namespace
}  // namespace hostport::kube
