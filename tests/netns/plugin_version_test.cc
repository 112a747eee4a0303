// Every CNI version the plugin speaks, end to end: ADD prints prevResult in the requested
// version, traffic flows, CHECK works from 0.4.0 on, and DEL cleans up.

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "tests/support/plugin_fixture.h"

namespace hostport::test {
namespace {

using ::testing::Contains;
using ::testing::Field;
using ::testing::IsEmpty;
using ::testing::Not;

constexpr uint16_t kHostPort = 8080;
constexpr uint16_t kContainerPort = 80;
constexpr int kIncompatibleVersion = 1;

const std::vector<std::string> kVersions = {"0.3.0", "0.3.1", "0.4.0", "1.0.0", "1.1.0"};

class PluginVersionTest : public PluginFixture, public ::testing::WithParamInterface<std::string> {
 protected:
  PluginVersionTest() : PluginFixture(HOSTPORT_PLUGIN_PATH) {}
};

TEST_P(PluginVersionTest, AddPrintsPrevResultInTheRequestedVersion) {
  const std::string version = GetParam();
  Pod* pod =
      addPod("pod-a", {.mappings = {{kHostPort, kContainerPort, "tcp"}}, .cniVersion = version});
  ASSERT_NE(pod, nullptr);

  const nlohmann::json& printed = pod->cachedResult;

  ASSERT_TRUE(printed.is_object()) << "ADD printed no JSON object";
  EXPECT_EQ(printed.value("cniVersion", ""), version);
  ASSERT_TRUE(printed.contains("ips") && printed["ips"].is_array()) << printed.dump();
  ASSERT_EQ(printed["ips"].size(), pod->bridgeResult["ips"].size()) << printed.dump();
  for (size_t i = 0; i < printed["ips"].size(); ++i) {
    const auto& ip = printed["ips"][i];
    EXPECT_EQ(ip.value("address", ""), pod->bridgeResult["ips"][i].value("address", ""));
    if (compareCniVersions(version, "1.0.0") < 0) {
      EXPECT_EQ(ip.value("version", ""), "4") << "0.3.x/0.4.0 results carry ips[].version";
    } else {
      EXPECT_FALSE(ip.contains("version")) << "1.x results have no ips[].version";
    }
  }
  EXPECT_EQ(printed.value("interfaces", nlohmann::json()), pod->bridgeResult["interfaces"]);
}

TEST_P(PluginVersionTest, AddForwardsAndDelRemovesEverything) {
  const std::string version = GetParam();
  Pod* pod =
      addPod("pod-a", {.mappings = {{kHostPort, kContainerPort, "tcp"}}, .cniVersion = version});
  ASSERT_NE(pod, nullptr);
  auto server = serve(*pod, Transport::kTcp, kContainerPort);
  ASSERT_NE(server, nullptr);
  EXPECT_THAT(tcpRequest(outside(), kNodeIpV4, kHostPort), RepliesFrom("pod-a tcp"));
  EXPECT_THAT(ownedBy(entries(), pod->owner()), Contains(Field(&NftEntry::key, "tcp . 8080")));

  ASSERT_OK_AND_ASSIGN(auto deleted, node().delPlugin(*pod, {.cniVersion = version}));

  EXPECT_THAT(deleted, Succeeded());
  EXPECT_THAT(ownedBy(entries(), pod->owner()), IsEmpty());
  EXPECT_THAT(tcpRequest(outside(), kNodeIpV4, kHostPort), IsUnreachable());
}

TEST_P(PluginVersionTest, CheckIsAvailableFromVersion040) {
  const std::string version = GetParam();
  Pod* pod =
      addPod("pod-a", {.mappings = {{kHostPort, kContainerPort, "tcp"}}, .cniVersion = version});
  ASSERT_NE(pod, nullptr);
  auto config =
      node().pluginConfig(version, {}, pod->cachedResult, {{kHostPort, kContainerPort, "tcp"}});

  ASSERT_OK_AND_ASSIGN(auto checked, node().invokePlugin("CHECK", *pod, config.dump()));

  if (compareCniVersions(version, "0.4.0") >= 0) {
    EXPECT_THAT(checked, Succeeded());
  } else {
    EXPECT_THAT(checked, FailsWithCode(kIncompatibleVersion))
        << "CHECK does not exist before 0.4.0";
  }
}

INSTANTIATE_TEST_SUITE_P(CniVersions, PluginVersionTest, ::testing::ValuesIn(kVersions),
                         [](const ::testing::TestParamInfo<std::string>& info) {
                           std::string name = "v" + info.param;
                           std::replace(name.begin(), name.end(), '.', '_');
                           return name;
                         });

class PluginVersionCommandTest : public PluginFixture {
 protected:
  PluginVersionCommandTest() : PluginFixture(HOSTPORT_PLUGIN_PATH) {}
};

TEST_F(PluginVersionCommandTest, VersionListsEverySupportedVersion) {
  Pod* pod = node().createPod("pod-a").value_or(nullptr);
  ASSERT_NE(pod, nullptr);

  ASSERT_OK_AND_ASSIGN(
      auto result,
      node().invokePlugin(
          "VERSION", *pod, "",
          {{"-CNI_CONTAINERID", ""}, {"-CNI_NETNS", ""}, {"-CNI_IFNAME", ""}, {"-CNI_ARGS", ""}}));

  ASSERT_THAT(result, Succeeded());
  auto json = nlohmann::json::parse(result.out, nullptr, false);
  ASSERT_TRUE(json.is_object() && json.contains("supportedVersions")) << result.out;
  const auto supported = json["supportedVersions"].get<std::vector<std::string>>();
  for (const auto& version : kVersions) EXPECT_THAT(supported, Contains(version));
  EXPECT_THAT(supported, Not(Contains("0.2.0")));
}

}  // namespace
}  // namespace hostport::test
