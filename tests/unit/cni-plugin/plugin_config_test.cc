#include "cni-plugin/plugin_config.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <string>

#include "tests/support/sanitized.h"

namespace hostport::cni {
namespace {

using nlohmann::json;
using ::testing::HasSubstr;
using ::testing::Not;
using ::testing::StartsWith;

IpAddress address(std::string_view text) { return *IpAddress::parse(text); }

/// stdin as containerd 1.6 sends it through the CRI: capitalised mapping keys, "TCP", an empty
/// HostIP, and null annotations for a pod without any.
constexpr std::string_view kContainerdStdin = R"({
  "cniVersion": "1.0.0",
  "name": "containerd-net",
  "type": "hostport",
  "capabilities": {"portMappings": true, "io.kubernetes.cri.pod-annotations": true},
  "runtimeConfig": {
    "portMappings": [
      {"HostPort": 8080, "ContainerPort": 80, "Protocol": "TCP", "HostIP": ""},
      {"HostPort": 5353, "ContainerPort": 53, "Protocol": "UDP", "HostIP": "192.0.2.10"}
    ],
    "io.kubernetes.cri.pod-annotations": null
  },
  "prevResult": {
    "cniVersion": "1.0.0",
    "interfaces": [{"name": "eth0", "sandbox": "/var/run/netns/cni-1"}],
    "ips": [{"interface": 0, "address": "10.88.0.5/16"}]
  }
})";

/// stdin as podman 4 (CNI backend) sends it: lowercase keys and hostIP "".
constexpr std::string_view kPodmanStdin = R"({
  "cniVersion": "0.4.0",
  "name": "podman",
  "type": "hostport",
  "snat": false,
  "agentSocket": "/run/hostport/agent.sock",
  "runtimeConfig": {
    "portMappings": [
      {"hostPort": 8080, "containerPort": 80, "protocol": "tcp", "hostIP": ""},
      {"hostPort": 9999, "containerPort": 9999, "protocol": "sctp", "hostIP": "2001:DB8::1"}
    ]
  },
  "prevResult": {"cniVersion": "0.4.0", "ips": [{"version": "4", "address": "10.88.0.6/16"}]}
})";

json minimalConfig() { return {{"cniVersion", "1.1.0"}, {"name", "net"}, {"type", "hostport"}}; }

json withMappings(json mappings) {
  json config = minimalConfig();
  config["runtimeConfig"]["portMappings"] = std::move(mappings);
  return config;
}

json withMapping(json mapping) { return withMappings(json::array({std::move(mapping)})); }

PluginConfig parsed(const json& config) {
  auto result = parsePluginConfig(config.dump());
  EXPECT_TRUE(result.has_value()) << result.error().message;
  return result.value_or(PluginConfig{});
}

Error errorOf(std::string_view text) {
  const auto result = parsePluginConfig(text);
  EXPECT_FALSE(result.has_value()) << text.substr(0, 200);
  return result ? Error{} : result.error();
}

/// The message for a config that must fail as kInvalidArgument.
std::string invalid(const json& config) {
  const Error error = errorOf(config.dump());
  EXPECT_EQ(error.code, ErrorCode::kInvalidArgument) << error.message;
  return error.message;
}

TEST(PluginConfigTest, ParsesContainerdStyleStdin) {
  const auto config = parsePluginConfig(kContainerdStdin);

  ASSERT_TRUE(config.has_value()) << config.error().message;
  EXPECT_EQ(config->cniVersion, "1.0.0");
  EXPECT_EQ(config->name, "containerd-net");
  EXPECT_EQ(config->portMappings, (std::vector<PortMapping>{
                                      {8080, 80, Protocol::kTcp, std::nullopt},
                                      {5353, 53, Protocol::kUdp, address("192.0.2.10")},
                                  }));
  EXPECT_EQ(config->podAnnotations, json::object());
  ASSERT_TRUE(config->prevResult.has_value());
  EXPECT_EQ((*config->prevResult)["ips"][0]["address"], "10.88.0.5/16");
  EXPECT_EQ(config->raw["type"], "hostport");
  EXPECT_TRUE(config->raw["capabilities"]["portMappings"]);
}

TEST(PluginConfigTest, ParsesPodmanStyleStdin) {
  const auto config = parsePluginConfig(kPodmanStdin);

  ASSERT_TRUE(config.has_value()) << config.error().message;
  EXPECT_EQ(config->cniVersion, "0.4.0");
  EXPECT_FALSE(config->snat);
  EXPECT_EQ(config->agentSocket, "/run/hostport/agent.sock");
  EXPECT_EQ(config->portMappings, (std::vector<PortMapping>{
                                      {8080, 80, Protocol::kTcp, std::nullopt},
                                      {9999, 9999, Protocol::kSctp, address("2001:db8::1")},
                                  }));
  EXPECT_EQ(config->portMappings[1].hostIp->str(), "2001:db8::1");
  EXPECT_EQ(config->prevResult, json::parse(R"({"cniVersion": "0.4.0",
      "ips": [{"version": "4", "address": "10.88.0.6/16"}]})"));
}

TEST(PluginConfigTest, StaticPortsDefaultsToTrueAndKeepsThePortMappings) {
  const auto config = parsed(withMapping({{"hostPort", 8080}, {"containerPort", 80}}));
  EXPECT_TRUE(config.staticPorts);
  EXPECT_EQ(config.portMappings.size(), 1u);
}

TEST(PluginConfigTest, StaticPortsFalseLeavesThePortMappingsToPortmap) {
  auto input = withMapping({{"hostPort", 8080}, {"containerPort", 80}});
  input["staticPorts"] = false;
  const auto config = parsed(input);
  EXPECT_FALSE(config.staticPorts);
  EXPECT_TRUE(config.portMappings.empty());
}

TEST(PluginConfigTest, StaticPortsFalseStillRejectsMalformedPortMappings) {
  auto input = withMapping({{"hostPort", 0}, {"containerPort", 80}});
  input["staticPorts"] = false;
  EXPECT_THAT(invalid(input), ::testing::HasSubstr("hostPort"));
}

TEST(PluginConfigTest, StaticPortsMustBeABoolean) {
  auto input = minimalConfig();
  input["staticPorts"] = "no";
  EXPECT_THAT(invalid(input), ::testing::HasSubstr("staticPorts"));
}

TEST(PluginConfigTest, EmptyAgentSocketMeansStandalone) {
  auto input = minimalConfig();
  input["agentSocket"] = "";
  EXPECT_EQ(parsed(input).agentSocket, "");
}

TEST(PluginConfigTest, AppliesDefaultsToAMinimalConfig) {
  const auto config = parsed(minimalConfig());

  EXPECT_TRUE(config.snat);
  EXPECT_FALSE(config.masqAll);
  EXPECT_EQ(config.conditionsV4, "");
  EXPECT_EQ(config.conditionsV6, "");
  EXPECT_EQ(config.agentSocket, "/run/hostport/agent.sock");  // the agent is the default
  EXPECT_EQ(config.statusGraceSeconds, 30u);
  EXPECT_EQ(config.stateDir, "/var/lib/cni/hostport");
  EXPECT_TRUE(config.portMappings.empty());
  EXPECT_EQ(config.prevResult, std::nullopt);
  EXPECT_EQ(config.podAnnotations, json::object());
  EXPECT_EQ(config.raw, minimalConfig());
}

TEST(PluginConfigTest, ReadsOurOwnOptions) {
  json input = minimalConfig();
  input["snat"] = false;
  input["masqAll"] = true;
  input["agentSocket"] = "/run/hostport/agent.sock";
  input["conditionsV4"] = {"ip saddr", "10.0.0.0/8"};
  input["conditionsV6"] = {"ip6 saddr  fd00::/8 "};

  const auto config = parsed(input);

  EXPECT_FALSE(config.snat);
  EXPECT_TRUE(config.masqAll);
  EXPECT_EQ(config.agentSocket, "/run/hostport/agent.sock");
  EXPECT_EQ(config.conditionsV4, "ip saddr 10.0.0.0/8");
  EXPECT_EQ(config.conditionsV6, "ip6 saddr fd00::/8");
}

TEST(PluginConfigTest, ReadsStatusOptions) {
  json input = minimalConfig();
  input["statusGraceSeconds"] = 0;
  input["stateDir"] = "/tmp/hostport-state";
  const auto config = parsed(input);
  EXPECT_EQ(config.statusGraceSeconds, 0u);
  EXPECT_EQ(config.stateDir, "/tmp/hostport-state");
  input["statusGraceSeconds"] = 86400;
  EXPECT_EQ(parsed(input).statusGraceSeconds, 86400u);
}

TEST(PluginConfigTest, RejectsBadStatusOptions) {
  const auto with = [](const char* key, json value) {
    json input = minimalConfig();
    input[key] = std::move(value);
    return invalid(input);
  };
  EXPECT_EQ(with("statusGraceSeconds", 86401),
            "statusGraceSeconds: 86401 must be an integer 0..86400");
  EXPECT_EQ(with("statusGraceSeconds", -1), "statusGraceSeconds: -1 must be an integer 0..86400");
  EXPECT_EQ(with("statusGraceSeconds", "30"),
            "statusGraceSeconds: \"30\" must be an integer 0..86400");
  EXPECT_EQ(with("stateDir", "relative/dir"),
            "stateDir: \"relative/dir\" must be an absolute path of printable characters");
  EXPECT_EQ(with("stateDir", ""),
            "stateDir: \"\" must be an absolute path of printable characters");
  EXPECT_EQ(with("stateDir", 5), "stateDir: 5 must be a string");
}

/// The GC attachment lists of a config, parsed.
Result<std::vector<AttachmentKey>> gcKeys(const json& lists) {
  json input = minimalConfig();
  for (const auto& [key, value] : lists.items()) input[key] = value;
  return parseValidAttachments(parsed(input));
}

TEST(PluginConfigTest, ReadsTheUnionOfBothGcAttachmentLists) {
  const auto keys = gcKeys(json::parse(R"({
    "cni.dev/valid-attachments": [{"containerID": "b", "ifname": "eth0"},
                                  {"containerID": "a", "ifname": "net1", "extra": 1}],
    "cni.dev/attachments": [{"containerID": "b", "ifname": "eth0"},
                            {"containerID": "c", "ifname": "eth0"}]})"));
  ASSERT_TRUE(keys.has_value()) << keys.error().message;
  EXPECT_EQ(*keys, (std::vector<AttachmentKey>{{"a", "net1"}, {"b", "eth0"}, {"c", "eth0"}}));
}

TEST(PluginConfigTest, ReadsAGcOfTheMostKeysOfTheLongestIdsInBothLists) {
  // What libcni sends for the largest GC the agent takes: both lists, each of kMaxGcKeys keys of
  // the longest container ID and ifname.
  json valid = json::array();
  const std::size_t keys = test::sizedForTheTree(agent::api::kMaxGcKeys);
  for (std::size_t i = 0; i < keys; ++i) {
    std::string id = std::to_string(i);
    id.insert(0, kMaxContainerIdLength - id.size(), 'c');
    valid.push_back({{"containerID", id}, {"ifname", "eth0-abcdefghij"}});
  }
  json input = minimalConfig();
  input["cni.dev/valid-attachments"] = valid;
  input["cni.dev/attachments"] = valid;
  const std::string text = input.dump();
  ASSERT_LE(text.size(), kMaxConfigBytes);
  const auto config = parsePluginConfig(text);
  ASSERT_TRUE(config.has_value()) << config.error().message;
  const auto parsed = parseValidAttachments(*config);
  ASSERT_TRUE(parsed.has_value()) << parsed.error().message;
  EXPECT_EQ(parsed->size(), keys);
}

TEST(PluginConfigTest, TreatsAbsentOrNullGcAttachmentListsAsEmpty) {
  for (const char* lists : {"{}", R"({"cni.dev/valid-attachments": null})",
                            R"({"cni.dev/valid-attachments": [], "cni.dev/attachments": null})"}) {
    const auto keys = gcKeys(json::parse(lists));
    ASSERT_TRUE(keys.has_value()) << lists << ": " << keys.error().message;
    EXPECT_TRUE(keys->empty()) << lists;
  }
}

TEST(PluginConfigTest, RejectsMalformedGcAttachmentsNamingTheField) {
  const auto error = [](const char* lists) {
    const auto keys = gcKeys(json::parse(lists));
    EXPECT_FALSE(keys.has_value()) << lists;
    if (keys) return std::string();
    EXPECT_EQ(keys.error().code, ErrorCode::kInvalidArgument);
    return keys.error().message;
  };
  EXPECT_EQ(error(R"({"cni.dev/attachments": {}})"), "cni.dev/attachments: {...} must be an array");
  EXPECT_EQ(error(R"({"cni.dev/valid-attachments": ["a/eth0"]})"),
            "cni.dev/valid-attachments[0]: \"a/eth0\" must be an object");
  EXPECT_EQ(error(R"({"cni.dev/valid-attachments": [{"ifname": "eth0"}]})"),
            "cni.dev/valid-attachments[0].containerID: missing");
  // Go's field name, not ours: a "containerId" key is not it.
  EXPECT_EQ(error(R"({"cni.dev/valid-attachments": [{"containerId": "a", "ifname": "eth0"}]})"),
            "cni.dev/valid-attachments[0].containerID: missing");
  EXPECT_THAT(error(R"({"cni.dev/attachments": [{"containerID": "a", "ifname": "a/b"}]})"),
              StartsWith("cni.dev/attachments[0].ifname: \"a/b\" must not contain '/'"));
  EXPECT_THAT(error(R"({"cni.dev/attachments": [{"containerID": "-a", "ifname": "eth0"}]})"),
              StartsWith("cni.dev/attachments[0].containerID: \"-a\" must"));
}

TEST(PluginConfigTest, TreatsNullOptionsAsAbsent) {
  json input = minimalConfig();
  for (const char* key : {"snat", "masqAll", "agentSocket", "conditionsV4", "name"}) {
    input[key] = nullptr;
  }

  const auto config = parsed(input);

  EXPECT_TRUE(config.snat);
  EXPECT_FALSE(config.masqAll);
  EXPECT_EQ(config.name, "");
}

TEST(PluginConfigTest, MatchesPortMappingKeysCaseInsensitively) {
  for (const auto& [hostPort, containerPort, protocol, hostIp] :
       {std::tuple{"hostPort", "containerPort", "protocol", "hostIP"},
        std::tuple{"HostPort", "ContainerPort", "Protocol", "HostIP"},
        std::tuple{"HOSTPORT", "containerport", "PROTOCOL", "hostip"}}) {
    const auto config = parsed(withMapping(
        {{hostPort, 8080}, {containerPort, 80}, {protocol, "udp"}, {hostIp, "192.0.2.1"}}));

    EXPECT_EQ(config.portMappings,
              (std::vector<PortMapping>{{8080, 80, Protocol::kUdp, address("192.0.2.1")}}))
        << hostPort;
  }
}

TEST(PluginConfigTest, RejectsOneKeySpelledTwiceInDifferentCase) {
  EXPECT_EQ(invalid(withMapping({{"hostPort", 8080}, {"HostPort", 9090}, {"containerPort", 80}})),
            "runtimeConfig.portMappings[0]: \"hostPort\" repeats a key that differs only in case");
}

TEST(PluginConfigTest, IgnoresUnknownPortMappingKeys) {
  const auto config =
      parsed(withMapping({{"hostPort", 8080}, {"containerPort", 80}, {"podman-extra", true}}));

  ASSERT_EQ(config.portMappings.size(), 1u);
  EXPECT_EQ(config.portMappings[0].hostPort, 8080);
}

TEST(PluginConfigTest, DefaultsProtocolToTcp) {
  for (const json& protocol : {json(nullptr), json("")}) {
    const auto config =
        parsed(withMapping({{"hostPort", 8080}, {"containerPort", 80}, {"protocol", protocol}}));
    ASSERT_EQ(config.portMappings.size(), 1u);
    EXPECT_EQ(config.portMappings[0].protocol, Protocol::kTcp) << protocol;
  }
  const auto config = parsed(withMapping({{"hostPort", 8080}, {"containerPort", 80}}));
  ASSERT_EQ(config.portMappings.size(), 1u);
  EXPECT_EQ(config.portMappings[0].protocol, Protocol::kTcp);
}

TEST(PluginConfigTest, AcceptsProtocolsInAnyCase) {
  const auto config =
      parsed(withMappings({{{"hostPort", 1}, {"containerPort", 1}, {"protocol", "Tcp"}},
                           {{"hostPort", 2}, {"containerPort", 2}, {"protocol", "uDP"}},
                           {{"hostPort", 3}, {"containerPort", 3}, {"protocol", "SCTP"}}}));

  ASSERT_EQ(config.portMappings.size(), 3u);
  EXPECT_EQ(config.portMappings[0].protocol, Protocol::kTcp);
  EXPECT_EQ(config.portMappings[1].protocol, Protocol::kUdp);
  EXPECT_EQ(config.portMappings[2].protocol, Protocol::kSctp);
}

TEST(PluginConfigTest, TreatsUnspecifiedAndEmptyHostIpAsAnyAddress) {
  for (const json& hostIp : {json(nullptr), json(""), json("0.0.0.0"), json("::"), json("0::0")}) {
    const auto config =
        parsed(withMapping({{"hostPort", 8080}, {"containerPort", 80}, {"hostIP", hostIp}}));
    ASSERT_EQ(config.portMappings.size(), 1u);
    EXPECT_EQ(config.portMappings[0].hostIp, std::nullopt) << hostIp;
  }
}

TEST(PluginConfigTest, AcceptsTheWholePortRange) {
  const auto config = parsed(withMappings(
      {{{"hostPort", 1}, {"containerPort", 65535}}, {{"hostPort", 65535}, {"containerPort", 1}}}));

  ASSERT_EQ(config.portMappings.size(), 2u);
  EXPECT_EQ(config.portMappings[0].hostPort, 1);
  EXPECT_EQ(config.portMappings[0].containerPort, 65535);
  EXPECT_EQ(config.portMappings[1].hostPort, 65535);
}

TEST(PluginConfigTest, TreatsAbsentOrNullRuntimeConfigAndPortMappingsAsNone) {
  json nullRuntimeConfig = minimalConfig();
  nullRuntimeConfig["runtimeConfig"] = nullptr;
  json emptyRuntimeConfig = minimalConfig();
  emptyRuntimeConfig["runtimeConfig"] = json::object();

  EXPECT_TRUE(parsed(nullRuntimeConfig).portMappings.empty());
  EXPECT_TRUE(parsed(emptyRuntimeConfig).portMappings.empty());
  EXPECT_TRUE(parsed(withMappings(nullptr)).portMappings.empty());
  EXPECT_TRUE(parsed(withMappings(json::array())).portMappings.empty());
}

TEST(PluginConfigTest, KeepsPodAnnotationsAsAnObject) {
  json input = minimalConfig();
  input["runtimeConfig"]["io.kubernetes.cri.pod-annotations"] = {
      {"hostport.io/ports", "grpc=19805, voice=7777/udp"}, {"kubernetes.io/config.source", "api"}};

  const auto config = parsed(input);

  EXPECT_EQ(config.podAnnotations["hostport.io/ports"], "grpc=19805, voice=7777/udp");
  EXPECT_EQ(config.podAnnotations.size(), 2u);
}

TEST(PluginConfigTest, TreatsAbsentOrNullPodAnnotationsAsEmpty) {
  json nullAnnotations = minimalConfig();
  nullAnnotations["runtimeConfig"]["io.kubernetes.cri.pod-annotations"] = nullptr;

  EXPECT_EQ(parsed(nullAnnotations).podAnnotations, json::object());
  EXPECT_EQ(parsed(withMappings(json::array())).podAnnotations, json::object());
}

TEST(PluginConfigTest, RejectsPodAnnotationsThatAreNotAnObject) {
  json input = minimalConfig();
  input["runtimeConfig"]["io.kubernetes.cri.pod-annotations"] = "hostport.io/ports=grpc=1";

  EXPECT_EQ(invalid(input),
            "runtimeConfig[\"io.kubernetes.cri.pod-annotations\"]: \"hostport.io/ports=grpc=1\" "
            "must be an object");
}

TEST(PluginConfigTest, TreatsAbsentOrNullPrevResultAsNone) {
  json nullPrevResult = minimalConfig();
  nullPrevResult["prevResult"] = nullptr;

  EXPECT_EQ(parsed(nullPrevResult).prevResult, std::nullopt);
  EXPECT_EQ(parsed(minimalConfig()).prevResult, std::nullopt);
}

TEST(PluginConfigTest, RejectsAPrevResultThatIsNotAnObject) {
  json input = minimalConfig();
  input["prevResult"] = json::array();

  EXPECT_EQ(invalid(input), "prevResult: [...] must be an object");
}

TEST(PluginConfigTest, RejectsMalformedJsonAsDecodeError) {
  for (const std::string_view text :
       {"", "{", R"({"cniVersion": "1.0.0",})", "{'cniVersion': '1.0.0'}", "nul",
        R"({"cniVersion": "1.0.0"} trailing)"}) {
    const Error error = errorOf(text);

    EXPECT_EQ(error.code, ErrorCode::kDecode) << text;
    EXPECT_EQ(error.message, "stdin: not valid JSON") << text;
  }
}

TEST(PluginConfigTest, RejectsADocumentThatIsNotAnObject) {
  const Error array = errorOf(R"([{"cniVersion": "1.0.0"}])");
  EXPECT_EQ(array.code, ErrorCode::kDecode);
  EXPECT_EQ(array.message, "stdin: [...] must be a JSON object");

  EXPECT_EQ(errorOf(R"("1.0.0")").message, "stdin: \"1.0.0\" must be a JSON object");
  EXPECT_EQ(errorOf("null").message, "stdin: null must be a JSON object");
}

TEST(PluginConfigTest, RejectsDeeplyNestedInput) {
  const std::string deep = R"({"cniVersion": "1.0.0", "x": )" + std::string(100000, '[') +
                           std::string(100000, ']') + "}";

  const Error error = errorOf(deep);

  EXPECT_EQ(error.code, ErrorCode::kDecode);
  EXPECT_EQ(error.message, "stdin: JSON nested deeper than 64 levels");
}

TEST(PluginConfigTest, RejectsOversizedInput) {
  const std::string huge =
      R"({"cniVersion": "1.0.0", "x": ")" + std::string(kMaxConfigBytes, 'a') + "\"}";

  const Error error = errorOf(huge);

  EXPECT_EQ(error.code, ErrorCode::kDecode);
  EXPECT_THAT(error.message, HasSubstr("exceed the limit of " + std::to_string(kMaxConfigBytes)));
}

TEST(PluginConfigTest, RequiresAStringCniVersion) {
  json missing = minimalConfig();
  missing.erase("cniVersion");
  json null = minimalConfig();
  null["cniVersion"] = nullptr;
  json number = minimalConfig();
  number["cniVersion"] = 1.0;

  EXPECT_EQ(invalid(missing), "cniVersion: missing");
  EXPECT_EQ(invalid(null), "cniVersion: missing");
  EXPECT_EQ(invalid(number), "cniVersion: 1.0 must be a string");
}

TEST(PluginConfigTest, LeavesVersionSupportToTheDispatcher) {
  json input = minimalConfig();
  input["cniVersion"] = "9.9.9";

  EXPECT_EQ(parsed(input).cniVersion, "9.9.9");
}

TEST(PluginConfigTest, RejectsOptionsOfTheWrongType) {
  const auto with = [](const char* key, json value) {
    json input = minimalConfig();
    input[key] = std::move(value);
    return invalid(input);
  };

  EXPECT_EQ(with("snat", "false"), "snat: \"false\" must be true or false");
  EXPECT_EQ(with("masqAll", 1), "masqAll: 1 must be true or false");
  EXPECT_EQ(with("agentSocket", 5), "agentSocket: 5 must be a string");
  EXPECT_EQ(with("name", json::object()), "name: {...} must be a string");
  EXPECT_EQ(with("conditionsV4", "ip saddr 10.0.0.0/8"),
            "conditionsV4: \"ip saddr 10.0.0.0/8\" must be an array of strings");
  EXPECT_EQ(with("conditionsV6", json::array({"ip6 saddr", 6})),
            "conditionsV6[1]: 6 must be a string");
}

TEST(PluginConfigTest, RejectsConditionsThatCouldEndTheRule) {
  json input = minimalConfig();
  input["conditionsV4"] = {"ip saddr 10.0.0.0/8; flush ruleset"};

  const std::string message = invalid(input);

  EXPECT_THAT(message, StartsWith("conditionsV4: "));
  EXPECT_THAT(message, HasSubstr("holds a forbidden character \";\""));
}

TEST(PluginConfigTest, RejectsHostPortOutsideTheRange) {
  for (const int port : {0, 65536, -1, 70000}) {
    EXPECT_EQ(invalid(withMappings({{{"hostPort", 80}, {"containerPort", 80}},
                                    {{"hostPort", port}, {"containerPort", 80}}})),
              "runtimeConfig.portMappings[1].hostPort: " + std::to_string(port) +
                  " must be an integer 1..65535");
  }
}

TEST(PluginConfigTest, RejectsContainerPortOutsideTheRange) {
  for (const int port : {0, 65536, -80}) {
    EXPECT_EQ(invalid(withMapping({{"hostPort", 80}, {"containerPort", port}})),
              "runtimeConfig.portMappings[0].containerPort: " + std::to_string(port) +
                  " must be an integer 1..65535");
  }
}

TEST(PluginConfigTest, RejectsPortsThatAreNotJsonIntegers) {
  EXPECT_EQ(invalid(withMapping({{"hostPort", "80"}, {"containerPort", 80}})),
            "runtimeConfig.portMappings[0].hostPort: \"80\" must be an integer 1..65535");
  EXPECT_EQ(invalid(withMapping({{"hostPort", 80.5}, {"containerPort", 80}})),
            "runtimeConfig.portMappings[0].hostPort: 80.5 must be an integer 1..65535");
  EXPECT_EQ(invalid(withMapping({{"hostPort", 80}, {"containerPort", 80.0}})),
            "runtimeConfig.portMappings[0].containerPort: 80.0 must be an integer 1..65535");
  EXPECT_EQ(invalid(withMapping({{"hostPort", true}, {"containerPort", 80}})),
            "runtimeConfig.portMappings[0].hostPort: true must be an integer 1..65535");
}

TEST(PluginConfigTest, RejectsPortsWrittenAsFloatsInTheText) {
  const Error error = errorOf(R"({"cniVersion": "1.0.0", "runtimeConfig": {"portMappings":
      [{"hostPort": 8e3, "containerPort": 80}]}})");

  EXPECT_EQ(error.code, ErrorCode::kInvalidArgument);
  EXPECT_EQ(error.message,
            "runtimeConfig.portMappings[0].hostPort: 8000.0 must be an integer 1..65535");
}

TEST(PluginConfigTest, RejectsMissingPorts) {
  EXPECT_EQ(invalid(withMapping({{"containerPort", 80}})),
            "runtimeConfig.portMappings[0].hostPort: missing");
  EXPECT_EQ(invalid(withMapping({{"hostPort", 80}, {"containerPort", nullptr}})),
            "runtimeConfig.portMappings[0].containerPort: missing");
}

TEST(PluginConfigTest, RejectsAnUnknownProtocol) {
  EXPECT_EQ(invalid(withMapping({{"hostPort", 80}, {"containerPort", 80}, {"protocol", "icmp"}})),
            "runtimeConfig.portMappings[0].protocol: \"icmp\" is not tcp, udp or sctp");
  EXPECT_EQ(invalid(withMapping({{"hostPort", 80}, {"containerPort", 80}, {"protocol", "tcpudp"}})),
            "runtimeConfig.portMappings[0].protocol: \"tcpudp\" is not tcp, udp or sctp");
  EXPECT_EQ(invalid(withMapping({{"hostPort", 80}, {"containerPort", 80}, {"protocol", 6}})),
            "runtimeConfig.portMappings[0].protocol: 6 must be a string");
}

TEST(PluginConfigTest, RejectsAHostIpThatIsNotAnAddress) {
  for (const std::string hostIp : {"1.2.3", "192.0.2.1/24", "fe80::1%eth0", "localhost"}) {
    EXPECT_EQ(invalid(withMapping({{"hostPort", 80}, {"containerPort", 80}, {"hostIP", hostIp}})),
              "runtimeConfig.portMappings[0].hostIP: \"" + hostIp + "\" is not an IP address");
  }
  EXPECT_EQ(invalid(withMapping({{"hostPort", 80}, {"containerPort", 80}, {"HostIP", 3232235521}})),
            "runtimeConfig.portMappings[0].hostIP: 3232235521 must be a string");
}

TEST(PluginConfigTest, RejectsMalformedPortMappingsContainers) {
  EXPECT_EQ(invalid(withMappings({{"hostPort", 80}})),
            "runtimeConfig.portMappings: {...} must be an array");
  EXPECT_EQ(invalid(withMappings({8080})), "runtimeConfig.portMappings[0]: 8080 must be an object");

  json input = minimalConfig();
  input["runtimeConfig"] = "portMappings";
  EXPECT_EQ(invalid(input), "runtimeConfig: \"portMappings\" must be an object");
}

TEST(PluginConfigTest, BoundsTheNumberOfPortMappings) {
  json mappings = json::array();
  for (int i = 0; i < 1024; ++i) {
    mappings.push_back({{"hostPort", 10000 + i}, {"containerPort", 80}});
  }
  EXPECT_EQ(parsed(withMappings(mappings)).portMappings.size(), 1024u);

  mappings.push_back({{"hostPort", 9999}, {"containerPort", 80}});
  EXPECT_EQ(invalid(withMappings(mappings)),
            "runtimeConfig.portMappings: 1025 entries exceed the limit of 1024");
}

TEST(PluginConfigTest, EscapesQuotesAndNewlinesOfHostileValues) {
  const std::string message = invalid(
      withMapping({{"hostPort", 80}, {"containerPort", 80}, {"protocol", "tcp\"\nFAKE LOG"}}));

  EXPECT_EQ(
      message,
      "runtimeConfig.portMappings[0].protocol: \"tcp\\\"\\nFAKE LOG\" is not tcp, udp or sctp");
  EXPECT_THAT(message, Not(HasSubstr("\n")));
}

TEST(PluginConfigTest, TruncatesVeryLongHostileValues) {
  const std::string hostile = "1.2.3.4" + std::string(100000, 'x');

  const std::string message =
      invalid(withMapping({{"hostPort", 80}, {"containerPort", 80}, {"hostIP", hostile}}));

  EXPECT_EQ(message, "runtimeConfig.portMappings[0].hostIP: \"" + hostile.substr(0, 64) +
                         "\"... is not an IP address");
}

TEST(PluginConfigTest, EscapesNonAsciiCharactersInMessages) {
  // A right-to-left override in a log line could disguise what follows it.
  const std::string message =
      invalid(withMapping({{"hostPort", 80}, {"containerPort", 80}, {"protocol", "tcp\u202e"}}));

  EXPECT_EQ(message,
            "runtimeConfig.portMappings[0].protocol: \"tcp\\u202e\" is not tcp, udp or sctp");
}

TEST(PluginConfigTest, KeepsMessagesPrintableWhenTheCutSplitsACharacter) {
  // Byte 64 is the first byte of a two-byte character, so the cut leaves broken UTF-8.
  const std::string hostile = std::string(63, 'a') + "\u00e9\u00e9";

  const std::string message =
      invalid(withMapping({{"hostPort", 80}, {"containerPort", 80}, {"hostIP", hostile}}));

  EXPECT_EQ(message, "runtimeConfig.portMappings[0].hostIP: \"" + std::string(63, 'a') +
                         "\\ufffd\"... is not an IP address");
}

TEST(PluginConfigTest, RejectsInvalidUtf8AsDecodeError) {
  const Error error = errorOf("{\"cniVersion\": \"1.0.0\", \"name\": \"\xff\"}");

  EXPECT_EQ(error.code, ErrorCode::kDecode);
  EXPECT_EQ(error.message, "stdin: not valid JSON");
}

}  // namespace
}  // namespace hostport::cni
