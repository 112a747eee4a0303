// Chaining as file operations (agent/cni_config/chain_files.h) in a temp conf dir: libcni's
// choice of file, the .conf conversion, the record, and uninstall back to the original files.

#include "agent/cni_config/chain_files.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <sys/stat.h>

#include "tests/unit/agent/cni_config/conf_files.h"
#include "tests/unit/agent/cni_config/primary_configs.h"

namespace hostport::agent::cni_config {
namespace {

using test::readJson;
using test::readText;

class ChainFilesTest : public ::testing::Test {
 protected:
  ChainPlan chainNow(const ChainOptions& options = {}) {
    auto plan = planChain(dirs_.paths(), options);
    EXPECT_TRUE(plan.has_value()) << plan.error().message;
    if (!plan) return {};
    auto applied = applyChain(dirs_.paths(), *plan);
    EXPECT_TRUE(applied.has_value()) << applied.error().message;
    EXPECT_EQ(applied.value_or(Applied::kSourceChanged), Applied::kWritten);
    return *plan;
  }

  /// Plans, then applies with the primary writing `text` to `file` at the `nth` check that the
  /// source is unchanged (1: after our temp file is written, before its rename; 2: before a
  /// converted `.conf` is unlinked).
  Applied applyWhileThePrimaryWrites(const std::filesystem::path& file, const std::string& text,
                                     int nth = 1) {
    auto plan = planChain(dirs_.paths(), {});
    EXPECT_TRUE(plan.has_value()) << plan.error().message;
    if (!plan) return Applied::kWritten;
    EXPECT_EQ(plan->kind, ChainPlan::Kind::kWrite);
    int checks = 0;
    auto applied = applyChain(dirs_.paths(), *plan, [&] {
      if (++checks == nth) test::writeInPlace(file, text);
    });
    EXPECT_TRUE(applied.has_value()) << applied.error().message;
    EXPECT_EQ(checks, nth) << "no check after the primary's write";
    return applied.value_or(Applied::kWritten);
  }

  test::ConfDirs dirs_;
};

TEST_F(ChainFilesTest, PicksTheFirstConfigByNameAndIgnoresOtherSuffixes) {
  test::writeInPlace(dirs_.conf("05-cilium.conflist.cilium_bak"), test::kCalico);
  test::writeInPlace(dirs_.conf(".00-hidden.conflist"), test::kCalico);
  test::writeInPlace(dirs_.conf("20-flannel.conflist"), test::kFlannel);
  test::writeInPlace(dirs_.conf("10-containerd-net.conflist"), test::kContainerdBridge);
  const auto plan = chainNow();
  EXPECT_EQ(plan.kind, ChainPlan::Kind::kWrite);
  EXPECT_EQ(plan.target, dirs_.conf("10-containerd-net.conflist"));
  EXPECT_TRUE(isChained(readJson(plan.target)));
  EXPECT_EQ(readJson(dirs_.conf("20-flannel.conflist")), Json::parse(test::kFlannel));
}

TEST_F(ChainFilesTest, AnUnparseableFileSortedFirstIsWaitedForNeverWritten) {
  const std::string torn(test::kCalico.substr(0, 40));
  test::writeInPlace(dirs_.conf("10-calico.conflist"), torn);
  test::writeInPlace(dirs_.conf("20-flannel.conflist"), test::kFlannel);
  const auto plan = chainNow();
  EXPECT_EQ(plan.kind, ChainPlan::Kind::kUnparseable);
  ASSERT_EQ(plan.unparseable.size(), 1u);
  EXPECT_EQ(plan.unparseable[0].path, dirs_.conf("10-calico.conflist"));
  EXPECT_EQ(readText(dirs_.conf("10-calico.conflist")), torn);
  EXPECT_EQ(readJson(dirs_.conf("20-flannel.conflist")), Json::parse(test::kFlannel));
}

TEST_F(ChainFilesTest, AnEmptyDirIsNoConfigYet) {
  EXPECT_EQ(chainNow().kind, ChainPlan::Kind::kNoConfig);
  std::filesystem::remove(dirs_.confDir);
  EXPECT_EQ(chainNow().kind, ChainPlan::Kind::kNoConfig);
}

TEST_F(ChainFilesTest, ASecondPassChangesNothing) {
  test::writeInPlace(dirs_.conf("10-calico.conflist"), test::kCalico);
  EXPECT_EQ(chainNow().kind, ChainPlan::Kind::kWrite);
  const auto written = readText(dirs_.conf("10-calico.conflist"));
  EXPECT_EQ(chainNow().kind, ChainPlan::Kind::kUpToDate);
  EXPECT_EQ(readText(dirs_.conf("10-calico.conflist")), written);
}

TEST_F(ChainFilesTest, KeepsTheFilesModeAndLeavesNoTempFile) {
  test::writeInPlace(dirs_.conf("10-calico.conflist"), test::kCalico);
  ::chmod(dirs_.conf("10-calico.conflist").c_str(), 0640);
  chainNow();
  struct stat status {};
  ASSERT_EQ(::stat(dirs_.conf("10-calico.conflist").c_str(), &status), 0);
  EXPECT_EQ(status.st_mode & 07777, 0640u);
  std::vector<std::string> names;
  for (const auto& entry : std::filesystem::directory_iterator(dirs_.confDir)) {
    names.push_back(entry.path().filename().string());
  }
  EXPECT_THAT(names, ::testing::ElementsAre("10-calico.conflist"));
}

// The lost update: the primary rewrites its file after our plan and before our rename. Same size
// and likely the same mtime tick: only the bytes tell the versions apart.
TEST_F(ChainFilesTest, APrimaryRewriteDuringOurWriteIsKeptAndChainedByTheNextPass) {
  const auto file = dirs_.conf("10-calico.conflist");
  test::writeInPlace(file, test::kCalico);
  const auto restarted = test::sameSizeEdit(test::kCalico, "node-1", "node-2");

  EXPECT_EQ(applyWhileThePrimaryWrites(file, restarted), Applied::kSourceChanged);

  EXPECT_EQ(readText(file), restarted);
  EXPECT_THAT(test::namesIn(dirs_.confDir), ::testing::ElementsAre("10-calico.conflist"));
  EXPECT_EQ(chainNow().kind, ChainPlan::Kind::kWrite);
  const Json chained = readJson(file);
  EXPECT_TRUE(isChained(chained));
  EXPECT_EQ(chained["plugins"][0]["nodename"], "node-2");
}

TEST_F(ChainFilesTest, AConfigReplacedByRenameDuringOurWriteIsKept) {
  const auto file = dirs_.conf("10-flannel.conflist");
  test::writeInPlace(file, test::kFlannel);
  auto plan = planChain(dirs_.paths(), {});
  ASSERT_TRUE(plan.has_value()) << plan.error().message;
  const auto applied = applyChain(dirs_.paths(), *plan, [&] {
    test::writeByRename(file, test::kFlannel);  // the same bytes, another file
  });
  ASSERT_TRUE(applied.has_value()) << applied.error().message;
  EXPECT_EQ(*applied, Applied::kSourceChanged);
  EXPECT_EQ(readText(file), test::kFlannel);
  EXPECT_THAT(test::namesIn(dirs_.confDir), ::testing::ElementsAre("10-flannel.conflist"));
}

TEST_F(ChainFilesTest, AConfRewrittenBeforeOurConflistIsRenamedIsConvertedByTheNextPass) {
  const auto conf = dirs_.conf("10-mynet.conf");
  test::writeInPlace(conf, test::kSingleConf);
  const auto restarted = test::sameSizeEdit(test::kSingleConf, "cni0", "cni1");

  EXPECT_EQ(applyWhileThePrimaryWrites(conf, restarted), Applied::kSourceChanged);

  EXPECT_EQ(readText(conf), restarted);
  EXPECT_THAT(test::namesIn(dirs_.confDir), ::testing::ElementsAre("10-mynet.conf"));
  chainNow();
  EXPECT_FALSE(std::filesystem::exists(conf));
  const Json conflist = readJson(dirs_.conf("10-mynet.conflist"));
  EXPECT_TRUE(isChained(conflist));
  EXPECT_EQ(conflist["plugins"][0]["bridge"], "cni1");
}

// Our conflist is in place, the `.conf` (which sorts first, so the runtime still uses it) changed:
// it stays, and uninstall after the next pass brings back its newest content.
TEST_F(ChainFilesTest, AConfRewrittenBeforeItIsUnlinkedIsKeptAndConvertedByTheNextPass) {
  const auto conf = dirs_.conf("10-mynet.conf");
  test::writeInPlace(conf, test::kSingleConf);
  const auto restarted = test::sameSizeEdit(test::kSingleConf, "cni0", "cni1");

  EXPECT_EQ(applyWhileThePrimaryWrites(conf, restarted, 2), Applied::kSourceChanged);

  EXPECT_EQ(readText(conf), restarted);
  EXPECT_THAT(test::namesIn(dirs_.confDir),
              ::testing::ElementsAre("10-mynet.conf", "10-mynet.conflist"));
  EXPECT_EQ(chainNow().kind, ChainPlan::Kind::kWrite);
  EXPECT_FALSE(std::filesystem::exists(conf));
  EXPECT_EQ(readJson(dirs_.conf("10-mynet.conflist"))["plugins"][0]["bridge"], "cni1");
  ASSERT_TRUE(unchain(dirs_.paths()).has_value());
  EXPECT_EQ(readJson(conf).dump(), Json::parse(restarted).dump());
}

TEST_F(ChainFilesTest, AConfIsConvertedAndUninstallBringsItBack) {
  test::writeInPlace(dirs_.conf("10-mynet.conf"), test::kSingleConf);
  const auto plan = chainNow();
  EXPECT_EQ(plan.target, dirs_.conf("10-mynet.conflist"));
  EXPECT_FALSE(std::filesystem::exists(dirs_.conf("10-mynet.conf")));
  const Json conflist = readJson(dirs_.conf("10-mynet.conflist"));
  EXPECT_EQ(conflist["name"], "mynet");
  EXPECT_EQ(conflist["cniVersion"], "0.4.0");
  EXPECT_TRUE(isChained(conflist));

  const auto record = readChainRecord(dirs_.stateDir);
  ASSERT_TRUE(record.has_value() && record->has_value());
  EXPECT_EQ((*record)->file, dirs_.conf("10-mynet.conflist"));
  ASSERT_TRUE((*record)->converted.has_value());
  EXPECT_EQ((*record)->converted->path, dirs_.conf("10-mynet.conf"));

  const auto undone = unchain(dirs_.paths());
  ASSERT_TRUE(undone.has_value()) << undone.error().message;
  EXPECT_TRUE(undone->restoredConf);
  EXPECT_EQ(readJson(dirs_.conf("10-mynet.conf")).dump(), Json::parse(test::kSingleConf).dump());
  EXPECT_FALSE(std::filesystem::exists(dirs_.conf("10-mynet.conflist")));
  EXPECT_FALSE(std::filesystem::exists(dirs_.stateDir / kChainRecordName));
}

// `kubectl debug node` sees the host's conf dir at /host/etc/cni/net.d, where the agent saw
// /etc/cni/net.d: the record's files are found by name in the dir given.
TEST_F(ChainFilesTest, UninstallFindsTheRecordedFilesInTheConfDirItIsGiven) {
  test::writeInPlace(dirs_.conf("10-mynet.conf"), test::kSingleConf);
  chainNow();
  ChainPaths elsewhere = dirs_.paths();
  elsewhere.confDir = dirs_.confDir.parent_path() / "seen-from-elsewhere";
  std::filesystem::rename(dirs_.confDir, elsewhere.confDir);

  const auto undone = unchain(elsewhere);

  ASSERT_TRUE(undone.has_value()) << undone.error().message;
  EXPECT_EQ(undone->file, elsewhere.confDir / "10-mynet.conf");
  EXPECT_EQ(readJson(elsewhere.confDir / "10-mynet.conf").dump(),
            Json::parse(test::kSingleConf).dump());
  EXPECT_FALSE(std::filesystem::exists(elsewhere.confDir / "10-mynet.conflist"));
  EXPECT_FALSE(std::filesystem::exists(dirs_.confDir)) << "nothing written where the agent saw it";
}

TEST_F(ChainFilesTest, UninstallPutsPortmapBackAtItsIndex) {
  test::writeInPlace(dirs_.conf("10-calico.conflist"), test::kCalico);
  chainNow();
  EXPECT_EQ(readJson(dirs_.conf("10-calico.conflist"))["plugins"][1]["type"], "hostport");
  const auto undone = unchain(dirs_.paths());
  ASSERT_TRUE(undone.has_value()) << undone.error().message;
  EXPECT_TRUE(undone->restoredPortmap);
  EXPECT_EQ(readJson(dirs_.conf("10-calico.conflist")).dump(), Json::parse(test::kCalico).dump());
}

TEST_F(ChainFilesTest, ARechainAfterAPrimaryRewriteKeepsTheRecordedPortmap) {
  test::writeInPlace(dirs_.conf("10-flannel.conflist"), test::kFlannel);
  chainNow();
  // flannel restarts: its own file again, portmap included; we chain again.
  test::writeInPlace(dirs_.conf("10-flannel.conflist"), test::kFlannel);
  EXPECT_TRUE(chainNow().inserted);
  ASSERT_TRUE(unchain(dirs_.paths()).has_value());
  EXPECT_EQ(readJson(dirs_.conf("10-flannel.conflist")).dump(), Json::parse(test::kFlannel).dump());
}

TEST_F(ChainFilesTest, UninstallWithoutARecordTakesUsOutOfTheUsedFile) {
  Json cilium = Json::parse(test::kCilium);
  cilium["plugins"].push_back(pluginEntry({}));
  test::writeInPlace(dirs_.conf("05-cilium.conflist"), cilium.dump());
  const auto undone = unchain(dirs_.paths());
  ASSERT_TRUE(undone.has_value()) << undone.error().message;
  EXPECT_EQ(readJson(dirs_.conf("05-cilium.conflist")).dump(), Json::parse(test::kCilium).dump());
}

TEST_F(ChainFilesTest, UninstallLeavesAnUnparseableFileAlone) {
  test::writeInPlace(dirs_.conf("10-calico.conflist"), test::kCalico);
  chainNow();
  test::writeInPlace(dirs_.conf("10-calico.conflist"), "{\"name\":");
  EXPECT_EQ(unchain(dirs_.paths()).error().code, ErrorCode::kDecode);
  EXPECT_EQ(readText(dirs_.conf("10-calico.conflist")), "{\"name\":");
  EXPECT_TRUE(std::filesystem::exists(dirs_.stateDir / kChainRecordName));
}

TEST_F(ChainFilesTest, RecordsSurviveTheirOwnCodec) {
  const ChainRecord record{
      "/etc/cni/net.d/10-x.conflist",
      ConvertedConf{"/etc/cni/net.d/10-x.conf", Json::parse(test::kSingleConf)},
      ReplacedPortmap{2, Json{{"type", "portmap"}, {"snat", false}}}};
  auto parsed = parseChainRecord(chainRecordJson(record));
  ASSERT_TRUE(parsed.has_value()) << parsed.error().message;
  EXPECT_EQ(*parsed, record);
  EXPECT_THAT(parseChainRecord(Json{{"file", "relative"}}).error().message,
              ::testing::HasSubstr("file"));
}

}  // namespace
}  // namespace hostport::agent::cni_config
