// The chainer (agent/cni_config/chainer.h) on its own thread, with real inotify in a temp conf
// dir: rewrites in place and by rename are undone within the debounce, a torn write is waited
// for and never written over, a fight stops the writes and reports itself, and uninstall
// restores the original. No fixed sleeps: each step waits for its condition with a deadline.

#include "agent/cni_config/chainer.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <atomic>

#include "tests/support/log_capture.h"
#include "tests/unit/agent/cni_config/conf_files.h"
#include "tests/unit/agent/cni_config/primary_configs.h"

namespace hostport::agent::cni_config {
namespace {

using namespace std::chrono_literals;
using test::readJson;
using test::waitUntil;

class ChainerTest : public ::testing::Test {
 protected:
  void start(FlapPolicy flap = {}) {
    ChainerOptions options;
    options.paths = dirs_.paths();
    options.pluginBinary = dirs_.binDir / "hostport";
    options.debounce = 20ms;
    options.backstop = 1h;  // only inotify can wake it in time
    options.flap = flap;
    options.onFlapping = [this](bool flapping) { ready_ = !flapping; };
    options.beforeSourceCheck = beforeSourceCheck_;
    auto chainer = Chainer::start(std::move(options));
    ASSERT_TRUE(chainer.has_value()) << chainer.error().message;
    chainer_ = std::move(*chainer);
  }
  bool chained(std::string_view name) { return isChained(readJson(dirs_.conf(name))); }
  /// Waits until the chainer has looked at the dir `more` more times than now.
  bool waitForPasses(uint64_t more) {
    const auto target = chainer_->passes() + more;
    return waitUntil([&] { return chainer_->passes() >= target; });
  }
  /// Waits until the chainer has counted `count` config writes in all. Not the file: it shows a
  /// write at the rename, the count goes up only after the dir's fsync, and a rewrite made in
  /// between is read in the same pass as the next one (one removal, not two).
  bool waitForWrites(uint64_t count) {
    return waitUntil([&] { return chainer_->writes() >= count; });
  }

  log::testing::LogCapture log_;
  test::ConfDirs dirs_;
  std::atomic<bool> ready_{true};
  std::function<void()> beforeSourceCheck_;
  std::unique_ptr<Chainer> chainer_;
};

TEST_F(ChainerTest, ChainsAtStartAndAgainAfterAnInPlaceRewrite) {
  test::writeInPlace(dirs_.conf("10-calico.conflist"), test::kCalico);
  start();
  ASSERT_TRUE(waitUntil([&] { return chained("10-calico.conflist"); }));
  EXPECT_EQ(log_.eventsOnce("cni.chained", 1).size(), 1u);

  test::writeInPlace(dirs_.conf("10-calico.conflist"), test::kCalico);  // calico restarts
  ASSERT_TRUE(waitUntil([&] { return chained("10-calico.conflist"); }));
  EXPECT_EQ(log_.eventsOnce("cni.rechained", 1).size(), 1u);
  EXPECT_TRUE(ready_);
}

TEST_F(ChainerTest, ChainsAgainAfterARewriteByRename) {
  test::writeInPlace(dirs_.conf("10-flannel.conflist"), test::kFlannel);
  start();
  ASSERT_TRUE(waitUntil([&] { return chained("10-flannel.conflist"); }));
  test::writeByRename(dirs_.conf("10-flannel.conflist"), test::kFlannel);
  ASSERT_TRUE(waitUntil([&] { return chained("10-flannel.conflist"); }));
  EXPECT_THAT(log_.eventsOnce("cni.rechained", 1),
              ::testing::ElementsAre(::testing::HasSubstr("10-flannel.conflist")));
}

TEST_F(ChainerTest, ATornWriteIsNotOverwrittenAndIsChainedOnceThePrimaryFinishes) {
  test::writeInPlace(dirs_.conf("10-calico.conflist"), test::kCalico);
  start();
  ASSERT_TRUE(waitUntil([&] { return chained("10-calico.conflist"); }));

  const std::string half(test::kCalico.substr(0, test::kCalico.size() / 2));
  test::writeInPlace(dirs_.conf("10-calico.conflist"), half);
  ASSERT_EQ(log_.eventsOnce("cni.torn_read", 1).size(), 1u);
  ASSERT_TRUE(waitForPasses(3));  // it retries after the debounce, and still writes nothing
  EXPECT_EQ(test::readText(dirs_.conf("10-calico.conflist")), half);
  EXPECT_EQ(log_.events("cni.torn_read").size(), 1u) << "one event per torn episode";

  test::writeInPlace(dirs_.conf("10-calico.conflist"), test::kCalico);  // the primary finishes
  ASSERT_TRUE(waitUntil([&] { return chained("10-calico.conflist"); }));
}

TEST_F(ChainerTest, AFightStopsTheWritesAndFailsReadiness) {
  test::writeInPlace(dirs_.conf("05-cilium.conflist"), test::kCilium);
  start({.maxRemovals = 3, .window = 60s, .quietPeriod = 1h});
  ASSERT_TRUE(waitForWrites(1));
  ASSERT_TRUE(chained("05-cilium.conflist"));
  // Cilium with cni.exclusive=true puts its own file back at every edit of ours, each time only
  // after our edit (counted) is there.
  for (uint64_t removal = 1; removal < 3; ++removal) {
    test::writeInPlace(dirs_.conf("05-cilium.conflist"), test::kCilium);
    ASSERT_TRUE(waitForWrites(1 + removal)) << removal;
  }
  const auto writes = chainer_->writes();
  ASSERT_EQ(writes, 3u) << log_.text();
  test::writeInPlace(dirs_.conf("05-cilium.conflist"), test::kCilium);
  ASSERT_TRUE(waitUntil([&] { return chainer_->flapping(); })) << log_.text();
  EXPECT_FALSE(ready_);
  EXPECT_THAT(log_.eventsOnce("cni.flapping", 1),
              ::testing::ElementsAre(::testing::HasSubstr("cni.exclusive=false")));

  test::writeInPlace(dirs_.conf("05-cilium.conflist"), test::kCilium);
  ASSERT_TRUE(waitForPasses(1));
  EXPECT_EQ(chainer_->writes(), writes);
  EXPECT_FALSE(chained("05-cilium.conflist"));
  EXPECT_EQ(log_.events("cni.flapping").size(), 1u);
}

TEST_F(ChainerTest, AFightEndsAfterTheQuietPeriod) {
  test::writeInPlace(dirs_.conf("05-cilium.conflist"), test::kCilium);
  start({.maxRemovals = 1, .window = 60s, .quietPeriod = 200ms});
  ASSERT_TRUE(waitUntil([&] { return chained("05-cilium.conflist"); }));
  test::writeInPlace(dirs_.conf("05-cilium.conflist"), test::kCilium);
  ASSERT_TRUE(waitUntil([&] { return chainer_->flapping(); })) << log_.text();
  ASSERT_TRUE(waitUntil([&] { return !chainer_->flapping() && chained("05-cilium.conflist"); }));
  EXPECT_TRUE(ready_);
  EXPECT_EQ(log_.eventsOnce("cni.flapping_over", 1).size(), 1u);
}

// Calico restarts (a removal) and writes again while we answer: its second version is not written
// over but chained by the next pass, and the two writes are one removal, not a fight.
TEST_F(ChainerTest, APrimaryRewriteDuringOurWriteIsChainedNextAsTheSameRemoval) {
  const auto file = dirs_.conf("10-calico.conflist");
  const auto restarted = test::sameSizeEdit(test::kCalico, "node-1", "node-2");
  std::atomic<bool> armed{false};
  beforeSourceCheck_ = [&] {
    if (armed.exchange(false)) test::writeInPlace(file, restarted);
  };
  test::writeInPlace(file, test::kCalico);
  start({.maxRemovals = 2, .window = 60s, .quietPeriod = 1h});
  ASSERT_TRUE(waitForWrites(1));

  armed = true;
  test::writeInPlace(file, test::kCalico);
  ASSERT_TRUE(waitForWrites(2)) << log_.text();

  const Json chained = readJson(file);
  EXPECT_TRUE(isChained(chained));
  EXPECT_EQ(chained["plugins"][0]["nodename"], "node-2");
  EXPECT_FALSE(armed);
  EXPECT_THAT(log_.eventsOnce("cni.source_changed", 1),
              ::testing::ElementsAre(::testing::HasSubstr("10-calico.conflist")));
  EXPECT_EQ(log_.eventsOnce("cni.rechained", 1).size(), 1u);
  EXPECT_TRUE(log_.events("cni.write_failed").empty());
  EXPECT_FALSE(chainer_->flapping());
  EXPECT_TRUE(ready_);
  EXPECT_THAT(test::namesIn(dirs_.confDir), ::testing::ElementsAre("10-calico.conflist"));
}

TEST_F(ChainerTest, WaitsForThePluginBinaryBeforeChaining) {
  std::filesystem::remove(dirs_.binDir / "hostport");
  test::writeInPlace(dirs_.conf("10-calico.conflist"), test::kCalico);
  start();
  ASSERT_EQ(log_.eventsOnce("cni.plugin_missing", 1).size(), 1u);
  EXPECT_FALSE(chained("10-calico.conflist"));
}

TEST_F(ChainerTest, StoppingLeavesTheChainAndUninstallRestoresTheOriginal) {
  test::writeInPlace(dirs_.conf("10-mynet.conf"), test::kSingleConf);
  start();
  ASSERT_TRUE(waitUntil([&] { return chained("10-mynet.conflist"); }));
  chainer_->stop();
  EXPECT_TRUE(chained("10-mynet.conflist")) << "SIGTERM never uninstalls";

  const auto undone = unchain(dirs_.paths());
  ASSERT_TRUE(undone.has_value()) << undone.error().message;
  EXPECT_EQ(readJson(dirs_.conf("10-mynet.conf")).dump(), Json::parse(test::kSingleConf).dump());
  EXPECT_FALSE(std::filesystem::exists(dirs_.conf("10-mynet.conflist")));
}

}  // namespace
}  // namespace hostport::agent::cni_config
