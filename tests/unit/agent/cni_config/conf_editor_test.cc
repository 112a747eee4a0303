// The pure editor (agent/cni_config/conf_editor.h) on each primary's shape: install, a repeated
// install that changes nothing, and uninstall back to the original, compared as text so key
// order and the spelling of every number count.

#include "agent/cni_config/conf_editor.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "tests/unit/agent/cni_config/primary_configs.h"

namespace hostport::agent::cni_config {
namespace {

Json parse(std::string_view text) { return Json::parse(text); }

std::vector<std::string> types(const Json& conflist) {
  std::vector<std::string> out;
  for (const auto& entry : conflist["plugins"]) out.push_back(entry.value("type", "?"));
  return out;
}

/// Installs twice and uninstalls; returns the first install's edit.
ChainEdit roundTrip(const Json& original, const ChainOptions& options = {}) {
  auto edit = chainIntoConflist(original, options);
  EXPECT_TRUE(edit.has_value()) << edit.error().message;
  if (!edit) return {};
  EXPECT_TRUE(edit->changed);
  EXPECT_TRUE(edit->inserted);
  EXPECT_TRUE(isChained(edit->conflist));

  auto again = chainIntoConflist(edit->conflist, options);
  EXPECT_TRUE(again.has_value());
  if (again) {
    EXPECT_FALSE(again->changed) << again->conflist.dump();
    EXPECT_FALSE(again->inserted);
    EXPECT_EQ(again->conflist.dump(), edit->conflist.dump());
  }

  auto restored = unchainFromConflist(edit->conflist, edit->replacedPortmap);
  EXPECT_TRUE(restored.has_value());
  if (restored) EXPECT_EQ(restored->dump(2), original.dump(2));
  return *edit;
}

TEST(ConfEditorTest, CalicoPortmapIsReplacedInPlaceWithItsSnat) {
  const Json original = parse(test::kCalico);
  const auto edit = roundTrip(original);
  EXPECT_THAT(types(edit.conflist), ::testing::ElementsAre("calico", "hostport", "bandwidth"));
  EXPECT_EQ(edit.conflist["plugins"][1].dump(),
            R"({"type":"hostport","capabilities":{"portMappings":true,)"
            R"("io.kubernetes.cri.pod-annotations":true},"snat":true})");
  ASSERT_TRUE(edit.replacedPortmap.has_value());
  EXPECT_EQ(edit.replacedPortmap->index, 1u);
  EXPECT_EQ(edit.replacedPortmap->entry, original["plugins"][1]);
  // Every other entry as it was, numbers spelled as they were.
  EXPECT_EQ(edit.conflist["plugins"][0].dump(), original["plugins"][0].dump());
  EXPECT_EQ(edit.conflist["plugins"][0]["weights"].dump(),
            "[1.0,1,0.1,1.5e-07,18446744073709551615,-9223372036854775808]");
  EXPECT_EQ(edit.conflist["plugins"][2].dump(), original["plugins"][2].dump());
}

TEST(ConfEditorTest, FlannelDelegateStaysAndPortmapIsReplaced) {
  const Json original = parse(test::kFlannel);
  const auto edit = roundTrip(original);
  EXPECT_THAT(types(edit.conflist), ::testing::ElementsAre("flannel", "hostport"));
  EXPECT_FALSE(edit.conflist["plugins"][1].contains("snat")) << "portmap had no snat to carry";
  EXPECT_EQ(edit.conflist["plugins"][0].dump(), original["plugins"][0].dump());
}

TEST(ConfEditorTest, ContainerdBridgeWithBothFamiliesKeepsItsRanges) {
  const Json original = parse(test::kContainerdBridge);
  const auto edit = roundTrip(original);
  EXPECT_THAT(types(edit.conflist), ::testing::ElementsAre("bridge", "hostport"));
  EXPECT_EQ(edit.conflist["plugins"][0]["ipam"]["ranges"].dump(),
            R"([[{"subnet":"10.88.0.0/16"}],[{"subnet":"2001:4860:4860::/64"}]])");
}

TEST(ConfEditorTest, CiliumWithoutPortmapGetsUsAppended) {
  const Json original = parse(test::kCilium);
  const auto edit = roundTrip(original);
  EXPECT_THAT(types(edit.conflist), ::testing::ElementsAre("cilium-cni", "hostport"));
  EXPECT_FALSE(edit.replacedPortmap.has_value());
}

TEST(ConfEditorTest, ASingleConfBecomesAConflistOfTheSameNameAndVersion) {
  const Json conf = parse(test::kSingleConf);
  auto conflist = conflistFromConf(conf);
  ASSERT_TRUE(conflist.has_value()) << conflist.error().message;
  EXPECT_EQ((*conflist)["name"], "mynet");
  EXPECT_EQ((*conflist)["cniVersion"], "0.4.0");
  EXPECT_EQ((*conflist)["plugins"][0].dump(), conf.dump());
  const auto edit = roundTrip(*conflist);
  EXPECT_THAT(types(edit.conflist), ::testing::ElementsAre("bridge", "hostport"));
}

TEST(ConfEditorTest, AConfWithoutNameOrTypeIsRefusedNamingTheField) {
  EXPECT_EQ(conflistFromConf(parse(R"({"type": "bridge"})")).error().message,
            "name: missing or not a string");
  EXPECT_EQ(conflistFromConf(parse(R"({"name": "n"})")).error().message,
            "type: missing or not a string");
}

TEST(ConfEditorTest, KeepingPortmapAppendsUsAfterItForAnnotationPortsOnly) {
  const Json original = parse(test::kCalico);
  const auto edit = roundTrip(original, {.replacePortmap = false, .agentSocket = ""});
  EXPECT_THAT(types(edit.conflist),
              ::testing::ElementsAre("calico", "portmap", "hostport", "bandwidth"));
  EXPECT_EQ(edit.conflist["plugins"][2]["staticPorts"], false);
  EXPECT_FALSE(edit.replacedPortmap.has_value());
}

TEST(ConfEditorTest, ANonDefaultSocketIsWrittenIntoOurEntry) {
  const auto entry = pluginEntry({.replacePortmap = true, .agentSocket = "/run/hp/a.sock"});
  EXPECT_EQ(entry["agentSocket"], "/run/hp/a.sock");
  EXPECT_FALSE(pluginEntry({}).contains("agentSocket"));
}

TEST(ConfEditorTest, TwoEntriesOfOursBecomeOneKeepingTheFirstsOptions) {
  Json conflist = parse(test::kCilium);
  conflist["plugins"].push_back({{"type", "hostport"}, {"masqAll", true}});
  conflist["plugins"].push_back({{"type", "hostport"}});
  const auto edit = chainIntoConflist(conflist, {});
  ASSERT_TRUE(edit.has_value());
  EXPECT_TRUE(edit->changed);
  EXPECT_FALSE(edit->inserted);
  EXPECT_THAT(types(edit->conflist), ::testing::ElementsAre("cilium-cni", "hostport"));
  EXPECT_EQ(edit->conflist["plugins"][1]["masqAll"], true);
}

TEST(ConfEditorTest, UninstallDoesNotAddASecondPortmapWhenThePrimaryBroughtItBack) {
  const Json original = parse(test::kFlannel);
  const auto edit = chainIntoConflist(original, {});
  ASSERT_TRUE(edit.has_value());
  // The primary rewrote its file (portmap back), and something added us again after it.
  Json rewritten = original;
  rewritten["plugins"].push_back(pluginEntry({}));
  auto restored = unchainFromConflist(rewritten, edit->replacedPortmap);
  ASSERT_TRUE(restored.has_value());
  EXPECT_EQ(restored->dump(), original.dump());
}

TEST(ConfEditorTest, AListWithoutPluginsIsRefused) {
  EXPECT_EQ(chainIntoConflist(parse(R"({"name": "x"})"), {}).error().message,
            "plugins: missing or not an array");
  EXPECT_FALSE(isChained(parse(R"({"plugins": 3})")));
}

}  // namespace
}  // namespace hostport::agent::cni_config
