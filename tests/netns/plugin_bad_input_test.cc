// Bad input to ADD (config, runtimeConfig, prevResult, environment) must fail with the right CNI
// error code and leave the node's whole nftables ruleset exactly as it was: both on a fresh node
// and on one where another pod already has mappings.

#include <fcntl.h>
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <sys/stat.h>

#include <filesystem>
#include <fstream>
#include <functional>

#include "common/unique_fd.h"
#include "tests/support/plugin_fixture.h"
#include "tests/support/temp_dir.h"

namespace hostport::test {
namespace {

using ::testing::AnyOf;
using ::testing::Eq;
using ::testing::Ge;
using ::testing::Matcher;

constexpr uint16_t kHostPort = 8080;
constexpr uint16_t kContainerPort = 80;

constexpr int kIncompatibleVersion = 1;
constexpr int kInvalidEnvironment = 4;
constexpr int kDecode = 6;
constexpr int kInvalidConfig = 7;

struct BadInput {
  std::string name;
  /// Edits the valid stdin {cniVersion, name, type, prevResult, runtimeConfig{portMappings}}.
  std::function<void(nlohmann::json&)> edit;
  std::vector<int> codes;  // any of these
  std::string rawStdin;    // replaces the JSON when set
  std::map<std::string, std::string> env;
};

void setMapping(nlohmann::json& config, const std::string& key, nlohmann::json value) {
  config["runtimeConfig"]["portMappings"][0][key] = std::move(value);
}

/// Puts `address` in the place of the container's first address.
std::function<void(nlohmann::json&)> containerAddress(std::string address) {
  return [address](nlohmann::json& c) { c["prevResult"]["ips"][0]["address"] = address; };
}

/// Points every prevResult address at interface `index`.
std::function<void(nlohmann::json&)> containerIndex(nlohmann::json index) {
  return [index](nlohmann::json& c) {
    for (auto& ip : c["prevResult"]["ips"]) ip["interface"] = index;
  };
}

std::vector<BadInput> badInputs() {
  auto none = [](nlohmann::json&) {};
  return {
      {"MalformedJson", none, {kDecode, kInvalidConfig}, R"({"cniVersion": "1.0.0", )"},
      {"NotAnObject", none, {kDecode, kInvalidConfig}, R"(["cniVersion"])"},
      {"EmptyStdin", none, {kDecode, kInvalidConfig}, " "},
      {"UnknownCniVersion", [](auto& c) { c["cniVersion"] = "9.9.9"; }, {kIncompatibleVersion}},
      {"UnsupportedOldCniVersion",
       [](auto& c) { c["cniVersion"] = "0.2.0"; },
       {kIncompatibleVersion}},
      {"MissingPrevResult", [](auto& c) { c.erase("prevResult"); }, {kInvalidConfig}},
      {"NullPrevResult", [](auto& c) { c["prevResult"] = nullptr; }, {kInvalidConfig}},
      {"PrevResultWithBadAddress",
       [](auto& c) { c["prevResult"]["ips"][0]["address"] = "10.88.0.300/24"; },
       {kInvalidConfig}},
      // Issue 29 items 4 and 6: addresses no pod has, and prefixes no pod subnet has.
      {"PrevResultLoopbackAddress", containerAddress("127.0.0.1/8"), {kInvalidConfig}},
      {"PrevResultUnspecifiedDefaultRoute", containerAddress("0.0.0.0/0"), {kInvalidConfig}},
      {"PrevResultPrefixWiderThanAPodSubnet", containerAddress("10.88.0.200/4"), {kInvalidConfig}},
      {"PrevResultLinkLocalAddress", containerAddress("169.254.169.254/16"), {kInvalidConfig}},
      {"PrevResultMulticastAddress", containerAddress("224.0.0.251/24"), {kInvalidConfig}},
      {"PrevResultBroadcastAddress", containerAddress("255.255.255.255/32"), {kInvalidConfig}},
      {"PrevResultSubnetBroadcastAddress", containerAddress("10.88.0.255/24"), {kInvalidConfig}},
      {"PrevResultIpv6LoopbackAddress", containerAddress("::1/128"), {kInvalidConfig}},
      {"PrevResultIpv6LinkLocalAddress", containerAddress("fe80::1/64"), {kInvalidConfig}},
      {"PrevResultBridgeGatewayAddress", containerAddress("10.88.0.1/24"), {kInvalidConfig}},
      // Issue 29 item 8: no address on the container's interface, with a port to forward.
      {"PrevResultInterfaceIndexOutOfRange", containerIndex(99), {kInvalidConfig}},
      {"PrevResultInterfaceIndexNegative", containerIndex(-1), {kInvalidConfig}},
      {"PrevResultInterfaceIndexTwoToThe63",
       containerIndex(nlohmann::json(uint64_t{1} << 63)),
       {kInvalidConfig}},
      {"PrevResultInterfaceWithoutSandbox",
       [](auto& c) {
         for (auto& interface : c["prevResult"]["interfaces"]) interface.erase("sandbox");
       },
       {kInvalidConfig}},
      {"PrevResultOfVersion020Shape",
       [](auto& c) {
         c["prevResult"] = {{"cniVersion", "0.2.0"},
                            {"ip4", {{"ip", "10.88.0.200/24"}, {"gateway", "10.88.0.1"}}}};
       },
       {kInvalidConfig}},
      {"IfnameThePrevResultDoesNotName", none, {kInvalidConfig}, "", {{"CNI_IFNAME", "net1"}}},
      {"HostPortZero", [](auto& c) { setMapping(c, "hostPort", 0); }, {kInvalidConfig}},
      {"HostPortTooLarge", [](auto& c) { setMapping(c, "hostPort", 65536); }, {kInvalidConfig}},
      {"HostPortNegative", [](auto& c) { setMapping(c, "hostPort", -80); }, {kInvalidConfig}},
      {"HostPortAsString", [](auto& c) { setMapping(c, "hostPort", "8080"); }, {kInvalidConfig}},
      {"HostPortFractional", [](auto& c) { setMapping(c, "hostPort", 8080.5); }, {kInvalidConfig}},
      {"ContainerPortZero", [](auto& c) { setMapping(c, "containerPort", 0); }, {kInvalidConfig}},
      {"ContainerPortTooLarge",
       [](auto& c) { setMapping(c, "containerPort", 70000); },
       {kInvalidConfig}},
      {"MissingHostPort",
       [](auto& c) { c["runtimeConfig"]["portMappings"][0].erase("hostPort"); },
       {kInvalidConfig}},
      {"UnknownProtocol", [](auto& c) { setMapping(c, "protocol", "icmp"); }, {kInvalidConfig}},
      {"ProtocolWithInjection",
       [](auto& c) { setMapping(c, "protocol", "tcp; flush ruleset"); },
       {kInvalidConfig}},
      {"HostIpOutOfRange",
       [](auto& c) { setMapping(c, "hostIP", "192.0.2.300"); },
       {kInvalidConfig}},
      {"HostIpNotAnAddress", [](auto& c) { setMapping(c, "hostIP", "node-1"); }, {kInvalidConfig}},
      {"HostIpWithPrefix",
       [](auto& c) { setMapping(c, "hostIP", "192.0.2.0/24"); },
       {kInvalidConfig}},
      {"HostIpWithInjection",
       [](auto& c) { setMapping(c, "hostIP", "192.0.2.1 } ; flush ruleset"); },
       {kInvalidConfig}},
      {"PortMappingsNotAnArray",
       [](auto& c) { c["runtimeConfig"]["portMappings"] = "8080:80"; },
       {kInvalidConfig}},
      {"PortMappingNotAnObject",
       [](auto& c) { c["runtimeConfig"]["portMappings"][0] = 8080; },
       {kInvalidConfig}},
      {"SnatNotABoolean", [](auto& c) { c["snat"] = "yes"; }, {kInvalidConfig}},
      {"MasqAllNotABoolean", [](auto& c) { c["masqAll"] = 1; }, {kInvalidConfig}},
      {"ConditionsNotAnArray",
       [](auto& c) { c["conditionsV4"] = "ip saddr 192.0.2.0/24"; },
       {kInvalidConfig}},
      {"ConditionsEndingTheRule",
       [](auto& c) { c["conditionsV4"] = {"ip saddr 192.0.2.0/24 accept ; flush ruleset"}; },
       {kInvalidConfig}},
      {"ConditionsWithNewline",
       [](auto& c) { c["conditionsV4"] = {"ip saddr 192.0.2.0/24\nflush ruleset"}; },
       {kInvalidConfig}},
      {"ConditionsWithBrace",
       [](auto& c) { c["conditionsV4"] = {"ip saddr 192.0.2.0/24 }"}; },
       {kInvalidConfig}},
      {"ConditionsWithVerdict",
       [](auto& c) { c["conditionsV4"] = {"ip saddr 192.0.2.0/24 drop"}; },
       {kInvalidConfig}},
      {"ConditionsWithOwnDnat",
       [](auto& c) { c["conditionsV4"] = {"ip saddr 0.0.0.0/0 dnat ip to 192.0.2.100"}; },
       {kInvalidConfig}},
      {"ConditionsWithMarkStatement",
       [](auto& c) { c["conditionsV4"] = {"ip saddr 192.0.2.0/24 meta mark set 0x2000"}; },
       {kInvalidConfig}},
      {"ConditionsWithJump",
       [](auto& c) { c["conditionsV4"] = {"ip saddr 192.0.2.0/24 jump postrouting"}; },
       {kInvalidConfig}},
      {"ConditionsWithHash",
       [](auto& c) { c["conditionsV4"] = {"ip saddr 192.0.2.0/24 #"}; },
       {kInvalidConfig}},
      {"ConditionsWithQuote",
       [](auto& c) { c["conditionsV4"] = {"ip saddr 192.0.2.0/24 comment \"x\""}; },
       {kInvalidConfig}},
      {"ConditionsNotStrings", [](auto& c) { c["conditionsV4"] = {42}; }, {kInvalidConfig}},
      {"ConditionsV6WithVerdict",
       [](auto& c) { c["conditionsV6"] = {"ip6 saddr ::1 drop"}; },
       {kInvalidConfig}},
      {"MissingContainerId", none, {kInvalidEnvironment}, "", {{"-CNI_CONTAINERID", ""}}},
      {"ContainerIdWithQuote",
       none,
       {kInvalidEnvironment},
       "",
       {{"CNI_CONTAINERID", "abc\"; flush ruleset"}}},
      {"ContainerIdWithSlash", none, {kInvalidEnvironment}, "", {{"CNI_CONTAINERID", "a/b"}}},
      {"ContainerIdTooLong",
       none,
       {kInvalidEnvironment},
       "",
       {{"CNI_CONTAINERID", std::string(101, 'a')}}},
      {"MissingIfname", none, {kInvalidEnvironment}, "", {{"-CNI_IFNAME", ""}}},
      {"IfnameTooLong", none, {kInvalidEnvironment}, "", {{"CNI_IFNAME", "eth0123456789012"}}},
      {"IfnameWithSlash", none, {kInvalidEnvironment}, "", {{"CNI_IFNAME", "eth/0"}}},
      {"MissingNetns", none, {kInvalidEnvironment}, "", {{"-CNI_NETNS", ""}}},
      {"UnknownCommand", none, {kInvalidEnvironment}, "", {{"CNI_COMMAND", "FROB"}}},
  };
}

struct Scenario {
  BadInput input;
  bool populated;  // another pod already has mappings

  friend void PrintTo(const Scenario& scenario, std::ostream* os) {
    *os << scenario.input.name << (scenario.populated ? " on a busy node" : " on a fresh node");
  }
};

class PluginBadInputTest : public PluginFixture, public ::testing::WithParamInterface<Scenario> {
 protected:
  PluginBadInputTest() : PluginFixture(HOSTPORT_PLUGIN_PATH) {}
};

TEST_P(PluginBadInputTest, FailsWithTheRightCodeAndLeavesTheRulesetUnchanged) {
  const BadInput& input = GetParam().input;
  if (GetParam().populated) {
    Pod* other = addPod("other", {.mappings = {{9090, kContainerPort, "tcp"}}});
    ASSERT_NE(other, nullptr);
  }
  Pod* pod = bridgedPod("pod-a");
  ASSERT_NE(pod, nullptr);
  nlohmann::json config = node().pluginConfig(defaultCniVersion(), {}, pod->bridgeResult,
                                              {{kHostPort, kContainerPort, "tcp"}});
  input.edit(config);
  const std::string stdinText = input.rawStdin.empty() ? config.dump() : input.rawStdin;
  ASSERT_OK_AND_ASSIGN(const std::string before, rulesetJson(nodeNetns()));

  ASSERT_OK_AND_ASSIGN(auto result, node().invokePlugin("ADD", *pod, stdinText, input.env));

  std::vector<Matcher<int>> codes;
  for (int code : input.codes) codes.push_back(Eq(code));
  EXPECT_THAT(result, FailsWithCode(AnyOfArray(codes))) << "stdin: " << stdinText;
  ASSERT_OK_AND_ASSIGN(const std::string after, rulesetJson(nodeNetns()));
  EXPECT_EQ(rulesetDifference(before, after), "")
      << "the failed ADD changed the ruleset; stdin: " << stdinText;
  EXPECT_THAT(ownedBy(entries(), pod->owner()), ::testing::IsEmpty());
}

// CNI_NETNS must name a network namespace: anything else there would get forwards (and, with an
// agent, a lease the reconciler could never judge gone). The plugin runs as the runtime runs it,
// as root in the node's mount namespace, so it sees every path below as the runtime does.
class PluginBadNetnsTest : public PluginFixture {
 protected:
  PluginBadNetnsTest() : PluginFixture(HOSTPORT_PLUGIN_PATH) {}
  TempDir scratch_;
};

TEST_F(PluginBadNetnsTest, RefusesACniNetnsThatIsNoNetworkNamespaceWithCode4NamingIt) {
  const std::string file = (scratch_ / "file").string();
  std::ofstream(file) << "not a namespace";
  const std::string fifo = (scratch_ / "fifo").string();
  ASSERT_EQ(::mkfifo(fifo.c_str(), 0600), 0);  // the plugin must not block opening it
  const std::string dir = (scratch_ / "dir").string();
  std::filesystem::create_directory(dir);
  const std::string missing = (scratch_ / "missing").string();
  // Some sandboxes deny even root the namespaces of their pid 1; refused all the same.
  const UniqueFd initMnt(::open("/proc/1/ns/mnt", O_PATH | O_CLOEXEC));
  const std::vector<std::pair<std::string, std::string>> cases = {
      {file, "is a regular file, not a network namespace"},
      {fifo, "is a FIFO, not a network namespace"},
      {"/dev/zero", "is a character device, not a network namespace"},
      {"/proc/1/ns/mnt", initMnt.valid() ? "is a mnt namespace, not a network namespace"
                                         : "cannot be opened: Permission denied"},
      {"/proc/self/ns/mnt", "is a mnt namespace, not a network namespace"},
      {"/proc/self/ns/pid", "is a pid namespace, not a network namespace"},
      {dir, "is a directory, not a network namespace"},
      {missing, "does not exist"},
      {"proc/1/ns/net", "must be an absolute path of printable characters"},
  };
  Pod* pod = bridgedPod("pod-a");
  ASSERT_NE(pod, nullptr);
  const std::string config = node()
                                 .pluginConfig(defaultCniVersion(), {}, pod->bridgeResult,
                                               {{kHostPort, kContainerPort, "tcp"}})
                                 .dump();
  ASSERT_OK_AND_ASSIGN(const std::string before, rulesetJson(nodeNetns()));
  for (const auto& [netns, what] : cases) {
    SCOPED_TRACE(netns);
    ASSERT_OK_AND_ASSIGN(auto result,
                         node().invokePlugin("ADD", *pod, config, {{"CNI_NETNS", netns}}));
    EXPECT_FALSE(result.timedOut);
    EXPECT_THAT(result, FailsWithCode(kInvalidEnvironment));
    auto error = parseCniError(result.out);
    ASSERT_OK(error) << result.out;
    EXPECT_EQ(error->msg, "CNI_NETNS: \"" + netns + "\" " + what);
    ASSERT_OK_AND_ASSIGN(const std::string after, rulesetJson(nodeNetns()));
    EXPECT_EQ(rulesetDifference(before, after), "") << "the refused ADD changed the ruleset";
  }
  EXPECT_THAT(ownedBy(entries(), pod->owner()), ::testing::IsEmpty());

  // The control: the pod's own netns path is taken.
  ASSERT_OK_AND_ASSIGN(auto added, node().invokePlugin("ADD", *pod, config));
  EXPECT_THAT(added, Succeeded());
}

std::vector<Scenario> scenarios() {
  std::vector<Scenario> all;
  for (bool populated : {false, true}) {
    for (const auto& input : badInputs()) all.push_back({input, populated});
  }
  return all;
}

INSTANTIATE_TEST_SUITE_P(Inputs, PluginBadInputTest, ::testing::ValuesIn(scenarios()),
                         [](const ::testing::TestParamInfo<Scenario>& info) {
                           return info.param.input.name +
                                  (info.param.populated ? "_OnBusyNode" : "_OnFreshNode");
                         });

}  // namespace
}  // namespace hostport::test
