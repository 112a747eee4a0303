// The verbs end to end in-process, against named fakes of the kernel seams and the agent
// (tests/fakes).

#include "cni-plugin/dispatcher.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <map>
#include <nlohmann/json.hpp>
#include <sstream>

#include "agent/api/node_files.h"
#include "nft/table_state.h"
#include "tests/fakes/fake_host_network.h"
#include "tests/fakes/fake_port_authority.h"
#include "tests/fakes/fake_ruleset.h"
#include "tests/support/refused_pod_addresses.h"
#include "tests/support/temp_dir.h"

namespace hostport::cni {
namespace {

using hostnet::FakeHostNetwork;
using nft::FakeRuleset;
using nlohmann::json;

json prevResult() {
  return json::parse(R"({
    "cniVersion": "1.0.0",
    "interfaces": [{"name": "cni0", "mac": "aa:bb:cc:dd:ee:ff"},
                   {"name": "veth1", "mac": "aa:bb:cc:dd:ee:01"},
                   {"name": "eth0", "mac": "aa:bb:cc:dd:ee:02", "sandbox": "/run/netns/p"}],
    "ips": [{"address": "10.88.0.5/16", "gateway": "10.88.0.1", "interface": 2}],
    "routes": [{"dst": "0.0.0.0/0"}]})");
}

json config(const std::string& version = "1.0.0") {
  return {{"cniVersion", version},
          {"name", "testnet"},
          {"type", "hostport"},
          {"agentSocket", ""},
          {"prevResult", prevResult()},
          {"runtimeConfig",
           {{"portMappings",
             json::array({{{"HostPort", 8080}, {"ContainerPort", 80}, {"Protocol", "TCP"}},
                          {{"hostPort", 5353}, {"containerPort", 53}, {"protocol", "udp"}}})}}}};
}

/// Agent mode at the default socket, with `annotations` as the runtime passes them.
json agentModeConfig(const json& annotations = nullptr) {
  auto input = config("1.1.0");
  input.erase("agentSocket");
  input["runtimeConfig"]["io.kubernetes.cri.pod-annotations"] = annotations;
  return input;
}

class DispatcherTest : public ::testing::Test {
 protected:
  struct Outcome {
    int exitCode;
    std::string out;
    std::string err;
    json document() const { return json::parse(out, nullptr, false); }
  };

  Outcome run(const std::string& verb, const std::string& stdinText) {
    env_["CNI_COMMAND"] = verb;
    std::ostringstream out, err;
    const PluginIo io{[this](const char* name) -> const char* {
                        auto found = env_.find(name);
                        return found == env_.end() ? nullptr : found->second.c_str();
                      },
                      stdinText, out, err};
    const PluginBackends backends{
        [this]() -> Result<std::unique_ptr<nft::Ruleset>> {
          ++rulesetOpened_;
          return std::unique_ptr<nft::Ruleset>(new ForwardingRuleset(ruleset_));
        },
        [this]() -> Result<std::unique_ptr<hostnet::HostNetwork>> {
          return std::unique_ptr<hostnet::HostNetwork>(new ForwardingHostNetwork(network_));
        },
        [this](const std::string& socketPath) -> std::unique_ptr<PortAuthority> {
          agentSocketUsed_ = socketPath;
          return std::unique_ptr<PortAuthority>(new ForwardingPortAuthority(agent_));
        },
        [this] { return now_; },
        [this](const std::string& path) -> Result<void> {
          netnsChecked_.push_back(path);
          const auto found = notNetns_.find(path);
          if (found == notNetns_.end()) return {};
          return fail(ErrorCode::kInvalidArgument, found->second);
        }};
    const int code = runPlugin(io, backends);
    return {code, out.str(), err.str()};
  }

  /// The dispatcher owns what the factory returns; these forward to the fixture's fakes.
  struct ForwardingRuleset : nft::Ruleset {
    explicit ForwardingRuleset(FakeRuleset& fake) : fake(fake) {}
    Result<void> ensureTables() override { return fake.ensureTables(); }
    Result<void> install(const nft::AttachmentRules& r) override { return fake.install(r); }
    Result<nft::AttachmentRules> remove(const std::string& o) override { return fake.remove(o); }
    Result<void> removeExact(const nft::AttachmentRules& r) override { return fake.removeExact(r); }
    Result<nft::AttachmentRules> removeIfOwned(const nft::AttachmentRules& r) override {
      return fake.removeIfOwned(r);
    }
    Result<void> installMany(const std::vector<const nft::AttachmentRules*>& r) override {
      return fake.installMany(r);
    }
    Result<void> scanElements(nft::TableScan& scan) override { return fake.scanElements(scan); }
    Result<nft::AttachmentRules> listOwned(const std::string& o) override {
      return fake.listOwned(o);
    }
    Result<std::optional<uint32_t>> generation() override { return fake.generation(); }
    Result<void> removePodSubnets(const std::vector<IpPrefix>& s) override {
      return fake.removePodSubnets(s);
    }
    FakeRuleset& fake;
  };
  struct ForwardingPortAuthority : PortAuthority {
    explicit ForwardingPortAuthority(FakePortAuthority& fake) : fake(fake) {}
    Result<Lease> allocate(const AllocationRequest& r) override { return fake.allocate(r); }
    Result<std::optional<Lease>> get(const AttachmentKey& k) override { return fake.get(k); }
    Result<std::optional<Lease>> release(const AttachmentKey& k) override {
      return fake.release(k);
    }
    Result<void> ready() override { return fake.ready(); }
    Result<std::vector<Lease>> collectGarbage(const std::string& network,
                                              const std::vector<AttachmentKey>& valid) override {
      return fake.collectGarbage(network, valid);
    }
    FakePortAuthority& fake;
  };
  struct ForwardingHostNetwork : hostnet::HostNetwork {
    explicit ForwardingHostNetwork(FakeHostNetwork& fake) : fake(fake) {}
    using hostnet::HostNetwork::enableRouteLocalnet;
    Result<void> enableRouteLocalnet(std::span<const IpAddress> ips) override {
      return fake.enableRouteLocalnet(ips);
    }
    Result<int> flushUdpConntrack(const std::vector<uint16_t>& ports) override {
      return fake.flushUdpConntrack(ports);
    }
    Result<bool> isLocalAddress(const IpAddress& address) override {
      return fake.isLocalAddress(address);
    }
    FakeHostNetwork& fake;
  };

  std::map<std::string, std::string> env_{{"CNI_CONTAINERID", "c0ffee"},
                                          {"CNI_NETNS", "/run/netns/p"},
                                          {"CNI_IFNAME", "eth0"},
                                          {"CNI_PATH", "/opt/cni/bin"},
                                          {"CNI_ARGS", "K8S_POD_NAMESPACE=ns;K8S_POD_NAME=p"}};
  /// agentModeConfig() with the records and notes in this test's temp dir.
  json agentConfig(const json& annotations = nullptr) const {
    auto input = agentModeConfig(annotations);
    input["stateDir"] = (dir_ / "cni-state").string();
    input["releaseSpool"] = (dir_ / "released").string();
    return input;
  }

  test::TempDir dir_;
  FakeRuleset ruleset_;
  FakeHostNetwork network_;
  FakePortAuthority agent_{&ruleset_};
  std::string agentSocketUsed_;
  int rulesetOpened_ = 0;
  std::map<std::string, std::string> notNetns_;  // path -> what the netns check says it is
  std::vector<std::string> netnsChecked_;
  test::TempDir stateDir_;  // STATUS's record, never the node's /var/lib/cni/hostport
  BootInstant now_{"0f1e2d3c-4b5a-6978-8796-a5b4c3d2e1f0", std::chrono::hours(1)};
};

TEST_F(DispatcherTest, VersionListsSupportedVersionsWithoutTouchingTheKernel) {
  const auto outcome = run("VERSION", R"({"cniVersion": "0.4.0"})");
  ASSERT_EQ(outcome.exitCode, 0);
  EXPECT_EQ(outcome.document()["cniVersion"], "0.4.0");
  EXPECT_EQ(outcome.document()["supportedVersions"],
            json::array({"0.3.0", "0.3.1", "0.4.0", "1.0.0", "1.1.0"}));
  EXPECT_EQ(rulesetOpened_, 0);
}

TEST_F(DispatcherTest, AddInstallsForwardsAndPrintsPrevResult) {
  const auto outcome = run("ADD", config().dump());
  ASSERT_EQ(outcome.exitCode, 0) << outcome.out;
  const auto& rules = ruleset_.installed.at("c0ffee/eth0");
  ASSERT_EQ(rules.forwards.size(), 2u);
  EXPECT_EQ(nft::describe(rules.forwards[0]), "tcp 0.0.0.0:8080 -> 10.88.0.5:80");
  EXPECT_EQ(nft::describe(rules.forwards[1]), "udp 0.0.0.0:5353 -> 10.88.0.5:53");
  ASSERT_EQ(rules.masquerades.size(), 1u);  // subnet peers + localhost
  EXPECT_EQ(nft::describe(rules.masquerades[0]), "10.88.0.5 (pod subnet)");
  EXPECT_EQ(ruleset_.podSubnets, std::vector{*IpPrefix::parse("10.88.0.0/16")});
  EXPECT_EQ(network_.localnetFor, std::vector<std::string>{"10.88.0.5"});
  EXPECT_EQ(network_.flushedPorts, std::vector<uint16_t>{5353});
  EXPECT_EQ(outcome.document()["ips"], prevResult()["ips"]);
  EXPECT_EQ(outcome.document()["cniVersion"], "1.0.0");
}

TEST_F(DispatcherTest, AddPrintsTheResultInTheRequestedVersion) {
  const auto outcome = run("ADD", config("0.3.1").dump());
  ASSERT_EQ(outcome.exitCode, 0) << outcome.out;
  EXPECT_EQ(outcome.document()["cniVersion"], "0.3.1");
  EXPECT_EQ(outcome.document()["ips"][0]["version"], "4");
}

TEST_F(DispatcherTest, MasqAllMasqueradesEverySource) {
  auto input = config();
  input["masqAll"] = true;
  ASSERT_EQ(run("ADD", input.dump()).exitCode, 0);
  const auto& masquerades = ruleset_.installed.at("c0ffee/eth0").masquerades;
  ASSERT_EQ(masquerades.size(), 1u);
  EXPECT_EQ(nft::describe(masquerades[0]), "10.88.0.5 (every source)");
  EXPECT_TRUE(ruleset_.podSubnets.empty());
}

TEST_F(DispatcherTest, SnatOffInstallsNoMasqueradeAndLeavesRouteLocalnetAlone) {
  auto input = config();
  input["snat"] = false;
  ASSERT_EQ(run("ADD", input.dump()).exitCode, 0);
  EXPECT_TRUE(ruleset_.installed.at("c0ffee/eth0").masquerades.empty());
  EXPECT_TRUE(network_.localnetFor.empty());
}

TEST_F(DispatcherTest, AddWithoutPrevResultIsInvalidConfig) {
  auto input = config();
  input.erase("prevResult");
  const auto outcome = run("ADD", input.dump());
  EXPECT_NE(outcome.exitCode, 0);
  EXPECT_EQ(outcome.document()["code"], 7);
  EXPECT_NE(outcome.document()["msg"].get<std::string>().find("prevResult"), std::string::npos);
  EXPECT_EQ(rulesetOpened_, 0);
}

TEST_F(DispatcherTest, BadInputFailsBeforeTheKernelIsTouched) {
  auto badPort = config();
  badPort["runtimeConfig"]["portMappings"][0]["HostPort"] = 70000;
  auto badProtocol = config();
  badProtocol["runtimeConfig"]["portMappings"][0]["Protocol"] = "icmp";
  auto badHostIp = config();
  badHostIp["runtimeConfig"]["portMappings"][0]["HostIP"] = "1.2.3";
  const std::vector<std::pair<std::string, int>> cases = {
      {"{not json", 6},    {config("0.2.0").dump(), 1}, {config("9.9.9").dump(), 1},
      {badPort.dump(), 7}, {badProtocol.dump(), 7},     {badHostIp.dump(), 7}};
  for (const auto& [input, code] : cases) {
    const auto outcome = run("ADD", input);
    EXPECT_NE(outcome.exitCode, 0) << input;
    EXPECT_EQ(outcome.document()["code"], code) << outcome.out;
    EXPECT_FALSE(outcome.document()["msg"].get<std::string>().empty());
  }
  EXPECT_EQ(rulesetOpened_, 0);
  EXPECT_TRUE(ruleset_.installed.empty());
}

TEST_F(DispatcherTest, BadEnvironmentIsCode4) {
  env_.erase("CNI_IFNAME");
  const auto outcome = run("ADD", config().dump());
  EXPECT_NE(outcome.exitCode, 0);
  EXPECT_EQ(outcome.document()["code"], 4);
  env_["CNI_IFNAME"] = "eth0";
  env_["CNI_CONTAINERID"] = "bad\"id";
  EXPECT_EQ(run("ADD", config().dump()).document()["code"], 4);
}

// A lease for a netns that is not one would forward to a sandbox that cannot exist, and one the
// agent could never judge gone: refused as a bad environment before anyone is asked for ports.
TEST_F(DispatcherTest, RefusesACniNetnsThatIsNoNetworkNamespaceWithCode4) {
  notNetns_["/run/netns/p"] = "is a regular file, not a network namespace";
  for (const std::string verb : {"ADD", "CHECK"}) {
    SCOPED_TRACE(verb);
    const auto outcome = run(verb, agentConfig().dump());
    EXPECT_EQ(outcome.exitCode, 1);
    EXPECT_EQ(outcome.document()["code"], 4) << outcome.out;
    EXPECT_EQ(outcome.document()["msg"],
              "CNI_NETNS: \"/run/netns/p\" is a regular file, not a network namespace");
  }
  EXPECT_TRUE(agent_.leases.empty());
  EXPECT_EQ(rulesetOpened_, 0);
  EXPECT_TRUE(agentSocketUsed_.empty());

  // Relative paths are never looked up: they would be read from the plugin's working directory.
  env_["CNI_NETNS"] = "proc/1/ns/net";
  netnsChecked_.clear();
  const auto relative = run("ADD", agentConfig().dump());
  EXPECT_EQ(relative.document()["code"], 4) << relative.out;
  EXPECT_EQ(relative.document()["msg"].get<std::string>().rfind("CNI_NETNS: ", 0), 0u)
      << relative.out;
  EXPECT_TRUE(netnsChecked_.empty());
}

TEST_F(DispatcherTest, DelDoesNotLookAtTheNetnsWhichMayBeGone) {
  notNetns_["/run/netns/p"] = "does not exist";
  EXPECT_EQ(run("DEL", config().dump()).exitCode, 0);
  EXPECT_TRUE(netnsChecked_.empty());
}

TEST_F(DispatcherTest, SkipsMappingsForAFamilyTheContainerLacks) {
  auto input = config();
  input["runtimeConfig"]["portMappings"] =
      json::array({{{"hostPort", 8080}, {"containerPort", 80}, {"hostIP", "2001:db8::1"}},
                   {{"hostPort", 9090}, {"containerPort", 90}}});
  const auto outcome = run("ADD", input.dump());
  ASSERT_EQ(outcome.exitCode, 0) << outcome.out;
  EXPECT_NE(outcome.err.find("skipping port mapping tcp [2001:db8::1]:8080"), std::string::npos)
      << outcome.err;
  ASSERT_EQ(ruleset_.installed.at("c0ffee/eth0").forwards.size(), 1u);
  EXPECT_EQ(nft::describe(ruleset_.installed.at("c0ffee/eth0").forwards[0]),
            "tcp 0.0.0.0:9090 -> 10.88.0.5:90");
}

// When it can forward none of them, the pod would run without the ports it asked for.
TEST_F(DispatcherTest, AddThatCanForwardNoneOfItsMappingsIsCode7) {
  auto input = config();
  input["runtimeConfig"]["portMappings"] =
      json::array({{{"hostPort", 8080}, {"containerPort", 80}, {"hostIP", "2001:db8::1"}}});
  const auto outcome = run("ADD", input.dump());
  EXPECT_NE(outcome.exitCode, 0);
  EXPECT_EQ(outcome.document()["code"], 7) << outcome.out;
  EXPECT_NE(outcome.document()["msg"].get<std::string>().find(
                "none of the 1 port mapping(s) can be forwarded"),
            std::string::npos)
      << outcome.out;
  EXPECT_EQ(rulesetOpened_, 0);
  EXPECT_TRUE(ruleset_.installed.empty());
}

/// prevResult with `address` in place of the container's IPv4 address.
json withContainerAddress(json input, const std::string& address) {
  input["prevResult"]["ips"][0]["address"] = address;
  return input;
}

// Issue 29 items 4 and 6: a prevResult address no pod has is refused with code 7 naming the
// field and the value, standalone and with the agent, before anything is asked or written.
TEST_F(DispatcherTest, AddRefusesAContainerAddressNoPodHasBeforeAnythingIsAskedOrWritten) {
  for (const bool withAgent : {false, true}) {
    for (const auto& [address, says] : test::refusedPodAddresses()) {
      const json input = withContainerAddress(
          withAgent ? agentConfig({{"hostport.io/ports", "a=80"}}) : config(), address);

      const auto outcome = run("ADD", input.dump());

      EXPECT_NE(outcome.exitCode, 0) << address;
      EXPECT_EQ(outcome.document()["code"], 7) << address << ": " << outcome.out;
      const std::string message = outcome.document()["msg"];
      EXPECT_NE(message.find("prevResult.ips[0].address: \"" + address + "\""), std::string::npos)
          << message;
      EXPECT_NE(message.find(says), std::string::npos) << message;
      EXPECT_TRUE(outcome.out.find("\"ips\"") == std::string::npos) << "no result printed";
    }
  }
  EXPECT_TRUE(agent_.requests.empty());
  EXPECT_EQ(rulesetOpened_, 0);
  EXPECT_TRUE(ruleset_.installed.empty());
  EXPECT_TRUE(ruleset_.podSubnets.empty());
}

// Issue 29 item 8: every prevResult that names no container address on CNI_IFNAME, with ports
// asked for, is code 7 saying so, and no port is leased or forwarded.
TEST_F(DispatcherTest, AddWithPortsButNoContainerAddressIsCode7AndLeasesNothing) {
  const auto withIndex = [](json input, const json& index) {
    input["prevResult"]["ips"][0]["interface"] = index;
    return input;
  };
  const auto withoutSandbox = [](json input) {
    input["prevResult"]["interfaces"][2].erase("sandbox");
    return input;
  };
  const auto v020 = [](json input) {
    input["prevResult"] = json::parse(R"({"cniVersion": "0.2.0",
        "ip4": {"ip": "10.88.0.5/16", "gateway": "10.88.0.1"}})");
    return input;
  };
  for (const bool withAgent : {false, true}) {
    const json base = withAgent ? agentConfig({{"hostport.io/ports", "a=80"}}) : config();
    const std::vector<std::tuple<std::string, json, std::string>> shapes = {
        {"interface 99", withIndex(base, 99), "eth0"},
        {"interface -1", withIndex(base, -1), "eth0"},
        {"interface 2^63", withIndex(base, json(uint64_t{1} << 63)), "eth0"},
        {"interface without sandbox", withoutSandbox(base), "eth0"},
        {"a 0.2.0-shaped result", v020(base), "eth0"},
        {"a CNI_IFNAME prevResult does not name", base, "net1"},
    };
    for (const auto& [shape, input, ifname] : shapes) {
      env_["CNI_IFNAME"] = ifname;
      const auto outcome = run("ADD", input.dump());

      EXPECT_NE(outcome.exitCode, 0) << shape;
      EXPECT_EQ(outcome.document()["code"], 7) << shape << ": " << outcome.out;
      EXPECT_NE(outcome.document()["msg"].get<std::string>().find(
                    "prevResult names no address on interface " + ifname + " inside the sandbox"),
                std::string::npos)
          << shape << ": " << outcome.out;
      EXPECT_EQ(outcome.err.find("installed"), std::string::npos) << shape << ": " << outcome.err;
    }
    env_["CNI_IFNAME"] = "eth0";
  }
  EXPECT_TRUE(agent_.requests.empty()) << "the agent was asked for ports";
  EXPECT_TRUE(agent_.leases.empty());
  EXPECT_EQ(rulesetOpened_, 0);

  // Without ports asked for, a pod without an address is no business of ours.
  auto noPorts = withIndex(config(), 99);
  noPorts["runtimeConfig"]["portMappings"] = json::array();
  EXPECT_EQ(run("ADD", noPorts.dump()).exitCode, 0);
}

// Item 8's CHECK half: a lease without forwards fails CHECK, whatever prevResult says.
TEST_F(DispatcherTest, CheckFailsOnALeaseWithoutForwards) {
  // A lease granted with "podIPs": [] and nothing installed for it (what item 8 found).
  AllocationRequest request;
  request.key = {"c0ffee", "eth0"};
  request.statics = {{8080, 80, PortProtocol::kTcp, std::nullopt}};
  request.forwarding = Forwarding{.network = "testnet"};
  ASSERT_TRUE(agent_.allocate(request));
  agent_.requests.clear();
  auto input = agentConfig();
  input["runtimeConfig"]["portMappings"] =
      json::array({{{"hostPort", 8080}, {"containerPort", 80}}});

  const auto sameResult = run("CHECK", withContainerAddress(input, "10.88.0.5/16").dump());
  EXPECT_NE(sameResult.exitCode, 0) << "the forward the lease stands for is not there";
  EXPECT_NE(sameResult.document()["msg"].get<std::string>().find("is missing"), std::string::npos)
      << sameResult.out;

  auto noAddress = input;
  noAddress["prevResult"]["ips"][0]["interface"] = 99;
  const auto outcome = run("CHECK", noAddress.dump());
  EXPECT_NE(outcome.exitCode, 0);
  EXPECT_EQ(outcome.document()["code"], 7) << outcome.out;
  EXPECT_NE(outcome.document()["msg"].get<std::string>().find("names no address on interface eth0"),
            std::string::npos)
      << outcome.out;

  // Standalone, the same: mappings with nowhere to go are no passing CHECK.
  auto standalone = config();
  standalone["prevResult"]["ips"][0]["interface"] = 99;
  EXPECT_EQ(run("CHECK", standalone.dump()).document()["code"], 7);
  standalone = config();
  standalone["runtimeConfig"]["portMappings"] =
      json::array({{{"hostPort", 8080}, {"containerPort", 80}, {"hostIP", "2001:db8::1"}}});
  EXPECT_EQ(run("CHECK", standalone.dump()).document()["code"], 7);
}

// A target the node itself holds (the bridge's gateway, the node's own address) would DNAT the
// host port to the node's services: refused before anything is written.
TEST_F(DispatcherTest, StandaloneAddRefusesATargetTheNodeHolds) {
  network_.localAddresses = {"10.88.0.5"};
  const auto outcome = run("ADD", config().dump());
  EXPECT_NE(outcome.exitCode, 0);
  EXPECT_EQ(outcome.document()["code"], 7) << outcome.out;
  EXPECT_NE(outcome.document()["msg"].get<std::string>().find(
                "pod address 10.88.0.5 is an address of this node"),
            std::string::npos)
      << outcome.out;
  EXPECT_EQ(rulesetOpened_, 0);
  EXPECT_TRUE(ruleset_.installed.empty());
}

TEST_F(DispatcherTest, ConflictIsOurCodeAndNamesTheHolder) {
  ruleset_.conflict = true;
  const auto outcome = run("ADD", config().dump());
  EXPECT_NE(outcome.exitCode, 0);
  EXPECT_EQ(outcome.document()["code"], 101);
  EXPECT_NE(outcome.document()["msg"].get<std::string>().find("other/eth0"), std::string::npos);
}

TEST_F(DispatcherTest, FailedRouteLocalnetRollsTheForwardsBack) {
  network_.failLocalnet = true;
  const auto outcome = run("ADD", config().dump());
  EXPECT_NE(outcome.exitCode, 0);
  EXPECT_EQ(outcome.document()["code"], 100);
  EXPECT_TRUE(ruleset_.installed.empty());
}

TEST_F(DispatcherTest, DelRemovesEverythingOfTheOwnerWithoutPrevResultOrNetns) {
  ASSERT_EQ(run("ADD", config().dump()).exitCode, 0);
  network_.flushedPorts.clear();
  env_["CNI_NETNS"] = "";
  auto input = config();
  input.erase("prevResult");
  input.erase("runtimeConfig");
  const auto outcome = run("DEL", input.dump());
  ASSERT_EQ(outcome.exitCode, 0) << outcome.out;
  EXPECT_TRUE(outcome.out.empty());
  EXPECT_TRUE(ruleset_.installed.empty());
  EXPECT_EQ(network_.flushedPorts, std::vector<uint16_t>{5353});  // UDP flushed at DEL too
}

// With the prevResult and mappings ADD had, DEL plans them again and removes those the owner
// holds by key, without listing every element.
TEST_F(DispatcherTest, StandaloneDelRemovesThePlannedForwardsByKey) {
  ASSERT_EQ(run("ADD", config().dump()).exitCode, 0);
  network_.flushedPorts.clear();
  const auto outcome = run("DEL", config().dump());
  ASSERT_EQ(outcome.exitCode, 0) << outcome.out;
  EXPECT_EQ(ruleset_.removeIfOwnedCalls, 1);
  EXPECT_TRUE(ruleset_.installed.empty());
  EXPECT_EQ(network_.flushedPorts, std::vector<uint16_t>{5353});
}

TEST_F(DispatcherTest, DelOfNothingAndDelWithGarbageConfigSucceed) {
  EXPECT_EQ(run("DEL", config().dump()).exitCode, 0);
  EXPECT_EQ(run("DEL", "{garbage").exitCode, 0);
}

TEST_F(DispatcherTest, CheckPassesAfterAddAndFailsWhenAnElementIsMissing) {
  ASSERT_EQ(run("ADD", config().dump()).exitCode, 0);
  EXPECT_EQ(run("CHECK", config().dump()).exitCode, 0);
  ruleset_.installed.at("c0ffee/eth0").forwards.pop_back();
  const auto outcome = run("CHECK", config().dump());
  EXPECT_NE(outcome.exitCode, 0);
  EXPECT_EQ(outcome.document()["code"], 103);
  EXPECT_NE(outcome.document()["msg"].get<std::string>().find("udp 0.0.0.0:5353"),
            std::string::npos)
      << outcome.out;
}

TEST_F(DispatcherTest, CheckFailsOnAForwardNobodyAskedFor) {
  ASSERT_EQ(run("ADD", config().dump()).exitCode, 0);
  auto& forwards = ruleset_.installed.at("c0ffee/eth0").forwards;
  forwards.push_back(forwards.front());
  forwards.back().hostPort = 9999;
  EXPECT_EQ(run("CHECK", config().dump()).document()["code"], 103);
}

TEST_F(DispatcherTest, CheckNamesTheFirstDifferenceMissingForwardsFirst) {
  ASSERT_EQ(run("ADD", config().dump()).exitCode, 0);
  const nft::AttachmentRules added = ruleset_.installed.at("c0ffee/eth0");
  auto& held = ruleset_.installed.at("c0ffee/eth0");
  held.forwards.erase(held.forwards.begin());
  held.forwards.push_back(added.forwards.front());
  held.forwards.back().hostPort = 9999;
  held.masquerades.clear();
  EXPECT_EQ(run("CHECK", config().dump()).document()["msg"],
            "forward tcp 0.0.0.0:8080 -> 10.88.0.5:80 of c0ffee/eth0 is missing from table "
            "hostport");

  held.forwards = added.forwards;
  held.forwards.push_back(added.forwards.front());
  held.forwards.back().hostPort = 9999;
  EXPECT_EQ(run("CHECK", config().dump()).document()["msg"],
            "table hostport holds an unexpected forward tcp 0.0.0.0:9999 -> 10.88.0.5:80 for "
            "c0ffee/eth0");

  held.forwards = added.forwards;
  const auto outcome = run("CHECK", config().dump());
  EXPECT_EQ(outcome.document()["code"], 103);
  EXPECT_EQ(outcome.document()["msg"],
            "masquerade 10.88.0.5 (pod subnet) of c0ffee/eth0 is missing from table hostport");

  held.masquerades = added.masquerades;
  ruleset_.podSubnets.clear();
  EXPECT_EQ(run("CHECK", config().dump()).document()["msg"],
            "pod subnet 10.88.0.0/16 of c0ffee/eth0 is missing from table hostport");
}

TEST_F(DispatcherTest, CheckPassesWithAMasqueradeNobodyAskedFor) {
  ASSERT_EQ(run("ADD", config().dump()).exitCode, 0);
  ruleset_.installed.at("c0ffee/eth0")
      .masquerades.push_back({*IpAddress::parse("10.88.0.5"), nft::MasqueradeScope::kEverySource});
  const auto outcome = run("CHECK", config().dump());
  EXPECT_EQ(outcome.exitCode, 0) << outcome.out;
}

TEST_F(DispatcherTest, VerbsRefuseVersionsTheyDoNotExistIn) {
  EXPECT_EQ(run("CHECK", config("0.3.1").dump()).document()["code"], 1);
  EXPECT_EQ(run("GC", config("1.0.0").dump()).document()["code"], 1);
  EXPECT_EQ(run("GC", config("1.1.0").dump()).exitCode, 0);
  EXPECT_EQ(run("STATUS", config("1.1.0").dump()).exitCode, 0);
}

TEST_F(DispatcherTest, AddAsksTheAgentAndForwardsWhatItGrants) {
  const auto outcome =
      run("ADD", agentConfig({{"hostport.io/ports", "grpc=19805, rtp=20000-20001/udp"},
                              {"hostport.io/pool", "games"}})
                     .dump());
  ASSERT_EQ(outcome.exitCode, 0) << outcome.out << outcome.err;
  EXPECT_EQ(agentSocketUsed_, "/run/hostport/agent.sock");
  ASSERT_EQ(agent_.requests.size(), 1u);
  const auto& request = agent_.requests[0];
  EXPECT_EQ(request.key.str(), "c0ffee/eth0");
  EXPECT_EQ(request.pod.namespaceName, "ns");
  EXPECT_EQ(request.pod.name, "p");
  EXPECT_EQ(request.netns, "/run/netns/p");
  EXPECT_EQ(request.pool, "games");
  EXPECT_EQ(request.statics.size(), 2u);  // the portMappings are static claims
  ASSERT_EQ(request.dynamics.size(), 2u);
  EXPECT_EQ(request.dynamics[1].count, 2);
  std::vector<std::string> forwards;
  for (const auto& forward : ruleset_.installed.at("c0ffee/eth0").forwards) {
    forwards.push_back(nft::describe(forward));
  }
  EXPECT_EQ(forwards,
            (std::vector<std::string>{
                "tcp 0.0.0.0:8080 -> 10.88.0.5:80", "udp 0.0.0.0:5353 -> 10.88.0.5:53",
                "tcp 0.0.0.0:30000 -> 10.88.0.5:19805", "udp 0.0.0.0:30001 -> 10.88.0.5:20000",
                "udp 0.0.0.0:30002 -> 10.88.0.5:20001"}));
}

TEST_F(DispatcherTest, StaticPortsFalseAsksOnlyForTheAnnotationPorts) {
  // After portmap in the chain (replacePortmap: false): portmap DNATs the pod spec's hostPorts,
  // so a second DNAT of ours for them would race it.
  auto input = agentConfig({{"hostport.io/ports", "grpc=19805"}});
  input["staticPorts"] = false;
  const auto outcome = run("ADD", input.dump());
  ASSERT_EQ(outcome.exitCode, 0) << outcome.out << outcome.err;
  ASSERT_EQ(agent_.requests.size(), 1u);
  EXPECT_TRUE(agent_.requests[0].statics.empty());
  std::vector<std::string> forwards;
  for (const auto& forward : ruleset_.installed.at("c0ffee/eth0").forwards) {
    forwards.push_back(nft::describe(forward));
  }
  EXPECT_EQ(forwards, std::vector<std::string>{"tcp 0.0.0.0:30000 -> 10.88.0.5:19805"});
}

TEST_F(DispatcherTest, StaticPortsFalseWithoutAnnotationsAsksTheAgentNothing) {
  auto input = agentConfig();
  input["staticPorts"] = false;
  const auto outcome = run("ADD", input.dump());
  ASSERT_EQ(outcome.exitCode, 0) << outcome.out << outcome.err;
  EXPECT_TRUE(agent_.requests.empty());
  EXPECT_TRUE(ruleset_.installed.empty());
}

TEST_F(DispatcherTest, UnreachableAgentIsTryAgainLaterAndInstallsNothing) {
  agent_.down = true;
  const auto outcome = run("ADD", agentConfig().dump());
  EXPECT_NE(outcome.exitCode, 0);
  EXPECT_EQ(outcome.document()["code"], 11);
  EXPECT_NE(outcome.document()["msg"].get<std::string>().find("/x.sock"), std::string::npos);
  EXPECT_TRUE(ruleset_.installed.empty());
}

TEST_F(DispatcherTest, ExhaustedPoolIsOurCode) {
  agent_.exhausted = true;
  const auto outcome = run("ADD", agentConfig({{"hostport.io/ports", "a=80"}}).dump());
  EXPECT_EQ(outcome.document()["code"], 102);
  EXPECT_TRUE(ruleset_.installed.empty());
}

TEST_F(DispatcherTest, AGrantTheAgentCannotInstallFailsAddAndLeavesNoLease) {
  ruleset_.conflict = true;
  const auto outcome = run("ADD", agentConfig({{"hostport.io/ports", "a=80"}}).dump());
  EXPECT_EQ(outcome.document()["code"], 101);
  EXPECT_TRUE(agent_.leases.empty());  // the agent took its grant back
  EXPECT_TRUE(ruleset_.installed.empty());
}

TEST_F(DispatcherTest, MalformedAnnotationIsCode7NamingTheToken) {
  const auto outcome =
      run("ADD", agentConfig({{"hostport.io/ports", "rtp=20000-19000/udp"}}).dump());
  EXPECT_EQ(outcome.document()["code"], 7);
  EXPECT_NE(outcome.document()["msg"].get<std::string>().find("rtp=20000-19000/udp"),
            std::string::npos)
      << outcome.out;
  EXPECT_TRUE(agent_.requests.empty());
}

TEST_F(DispatcherTest, DynamicPortsNeedTheAgent) {
  auto input = config();
  input["runtimeConfig"]["io.kubernetes.cri.pod-annotations"] = {{"hostport.io/ports", "a=80"}};
  const auto outcome = run("ADD", input.dump());
  EXPECT_EQ(outcome.document()["code"], 7);
  EXPECT_NE(outcome.document()["msg"].get<std::string>().find("agentSocket"), std::string::npos);
}

TEST_F(DispatcherTest, DelIsOneRequestToTheAgentWhichRemovesTheForwards) {
  ASSERT_EQ(run("ADD", agentConfig({{"hostport.io/ports", "a=80"}}).dump()).exitCode, 0);
  ASSERT_TRUE(std::filesystem::exists(dir_ / "cni-state" / "c0ffee:eth0"));
  rulesetOpened_ = 0;
  const auto outcome = run("DEL", agentConfig().dump());
  EXPECT_EQ(outcome.exitCode, 0) << outcome.out;
  EXPECT_TRUE(ruleset_.installed.empty());
  EXPECT_EQ(rulesetOpened_, 0) << "the plugin's DEL touched the table";
  EXPECT_EQ(agent_.released, std::vector<std::string>{"c0ffee/eth0"});
  EXPECT_FALSE(std::filesystem::exists(dir_ / "cni-state" / "c0ffee:eth0"));
}

TEST_F(DispatcherTest, DelWhileTheAgentIsDownRemovesByKeyAndLeavesAReleaseNote) {
  ASSERT_EQ(run("ADD", agentConfig({{"hostport.io/ports", "a=80"}}).dump()).exitCode, 0);
  agent_.down = true;
  const auto outcome = run("DEL", agentConfig().dump());
  EXPECT_EQ(outcome.exitCode, 0) << outcome.out;
  EXPECT_TRUE(ruleset_.installed.empty());  // our elements go even without the agent
  EXPECT_EQ(ruleset_.removeExactCalls, 1) << "by key, from the record ADD kept";
  EXPECT_NE(outcome.err.find("release note"), std::string::npos) << outcome.err;
  const auto notes = agent::api::readReleaseNotes(dir_ / "released");
  ASSERT_TRUE(notes.has_value());
  ASSERT_EQ(notes->size(), 1u);
  EXPECT_EQ(notes->front().key.value().str(), "c0ffee/eth0");
  EXPECT_FALSE(std::filesystem::exists(dir_ / "cni-state" / "c0ffee:eth0"));
}

TEST_F(DispatcherTest, DelWhileTheAgentIsDownFailsWhenNoNoteCanBeLeft) {
  ASSERT_EQ(run("ADD", agentConfig({{"hostport.io/ports", "a=80"}}).dump()).exitCode, 0);
  agent_.down = true;
  auto input = agentConfig();
  input["releaseSpool"] = "/proc/version/released";  // a file: no directory can be made there
  const auto outcome = run("DEL", input.dump());
  EXPECT_NE(outcome.exitCode, 0) << "the runtime must retry, or the agent would undo the DEL";
  EXPECT_TRUE(ruleset_.installed.empty());
}

TEST_F(DispatcherTest, CheckComparesTheTableWithTheAgentsLease) {
  ASSERT_EQ(run("ADD", agentConfig({{"hostport.io/ports", "a=80"}}).dump()).exitCode, 0);
  EXPECT_EQ(run("CHECK", agentConfig({{"hostport.io/ports", "a=80"}}).dump()).exitCode, 0);
  agent_.leases.clear();
  const auto outcome = run("CHECK", agentConfig({{"hostport.io/ports", "a=80"}}).dump());
  EXPECT_EQ(outcome.document()["code"], 103);
  EXPECT_NE(outcome.document()["msg"].get<std::string>().find("no lease"), std::string::npos);
}

/// agentModeConfig() with STATUS's grace and its record in the fixture's temp dir.
json statusConfig(const test::TempDir& stateDir, int graceSeconds) {
  auto input = agentModeConfig();
  input["stateDir"] = stateDir.path();
  input["statusGraceSeconds"] = graceSeconds;
  return input;
}

TEST_F(DispatcherTest, StatusIsCode50WhileTheAgentIsDown) {
  // A grace of 0: the first unreachable STATUS fails.
  EXPECT_EQ(run("STATUS", statusConfig(stateDir_, 0).dump()).exitCode, 0);
  agent_.down = true;
  const auto outcome = run("STATUS", statusConfig(stateDir_, 0).dump());
  EXPECT_NE(outcome.exitCode, 0);
  EXPECT_EQ(outcome.document()["code"], 50);
}

TEST_F(DispatcherTest, StatusSucceedsWhileTheAgentIsDownForLessThanTheGrace) {
  const auto input = statusConfig(stateDir_, 30).dump();
  const auto record = stateDir_ / "agent-unreachable-since";
  ASSERT_EQ(run("STATUS", input).exitCode, 0);
  EXPECT_FALSE(std::filesystem::exists(record));  // a healthy node writes nothing

  agent_.down = true;
  const auto first = run("STATUS", input);
  EXPECT_EQ(first.exitCode, 0) << first.out;
  EXPECT_TRUE(first.out.empty());
  EXPECT_NE(first.err.find("hostport STATUS: warning: hostport-agent is not reachable"),
            std::string::npos)
      << first.err;
  ASSERT_TRUE(std::filesystem::exists(record));

  now_.sinceBoot += std::chrono::seconds(30);
  EXPECT_EQ(run("STATUS", input).exitCode, 0);  // the grace itself still passes

  now_.sinceBoot += std::chrono::seconds(1);
  const auto failed = run("STATUS", input);
  EXPECT_NE(failed.exitCode, 0);
  EXPECT_EQ(failed.document()["code"], 50);
  EXPECT_EQ(failed.document()["msg"],
            "hostport-agent is not ready: hostport-agent is not reachable (unreachable for 31 s, "
            "longer than the grace of 30 s)");
}

TEST_F(DispatcherTest, StatusForgetsTheOutageOnceTheAgentAnswers) {
  const auto input = statusConfig(stateDir_, 30).dump();
  agent_.down = true;
  ASSERT_EQ(run("STATUS", input).exitCode, 0);
  agent_.down = false;
  now_.sinceBoot += std::chrono::seconds(20);
  ASSERT_EQ(run("STATUS", input).exitCode, 0);
  EXPECT_FALSE(std::filesystem::exists(stateDir_ / "agent-unreachable-since"));
  // A new outage gets a whole grace of its own.
  agent_.down = true;
  now_.sinceBoot += std::chrono::seconds(20);
  ASSERT_EQ(run("STATUS", input).exitCode, 0);
  now_.sinceBoot += std::chrono::seconds(20);
  EXPECT_EQ(run("STATUS", input).exitCode, 0);
}

TEST_F(DispatcherTest, StatusOfAStandalonePluginNeitherAsksNorWrites) {
  auto input = config("1.1.0");
  input["stateDir"] = stateDir_.path();
  input["statusGraceSeconds"] = 0;
  agent_.down = true;
  EXPECT_EQ(run("STATUS", input.dump()).exitCode, 0);
  EXPECT_TRUE(agentSocketUsed_.empty());
  EXPECT_TRUE(std::filesystem::is_empty(stateDir_.path()));
}

/// A GC as libcni sends it: both attachment lists (the same keys, under the spec's old and new
/// names), on the config of network "testnet".
json gcConfig(const json& valid) {
  auto input = agentModeConfig();
  input.erase("prevResult");
  input.erase("runtimeConfig");
  input["cni.dev/valid-attachments"] = valid;
  input["cni.dev/attachments"] = valid;
  return input;
}

/// A lease the fake agent holds for `containerId`/eth0 on CNI network `network`.
void holdLease(FakePortAuthority& agent, const std::string& containerId,
               const std::string& network) {
  AllocationRequest request;
  request.key = {containerId, "eth0"};
  request.forwarding = Forwarding{.network = network};
  ASSERT_TRUE(agent.allocate(request));
}

TEST_F(DispatcherTest, GcSendsTheNetworkAndItsValidAttachmentsInOneRequest) {
  holdLease(agent_, "keep", "testnet");
  holdLease(agent_, "gone", "testnet");
  holdLease(agent_, "other", "macvlan");
  const auto outcome = run("GC", gcConfig(json::parse(R"([{"containerID": "keep", "ifname": "eth0"},
                                         {"containerID": "keep", "ifname": "net1"}])"))
                                     .dump());
  ASSERT_EQ(outcome.exitCode, 0) << outcome.out << outcome.err;
  EXPECT_TRUE(outcome.out.empty());
  ASSERT_EQ(agent_.gcRequests.size(), 1u);
  EXPECT_EQ(agent_.gcRequests[0].first, "testnet");
  EXPECT_EQ(agent_.gcRequests[0].second,
            (std::vector<AttachmentKey>{{"keep", "eth0"}, {"keep", "net1"}}));
  EXPECT_EQ(agent_.leases.size(), 2u);
  EXPECT_FALSE(agent_.leases.contains("gone/eth0"));
  EXPECT_NE(outcome.err.find("hostport GC: network testnet: 2 valid attachment(s), released 1 "
                             "lease(s)"),
            std::string::npos)
      << outcome.err;
  EXPECT_EQ(rulesetOpened_, 0);  // the agent removes what it releases
}

TEST_F(DispatcherTest, GcReadsEitherAttachmentListAndTheirUnion) {
  auto input = gcConfig(nullptr);
  input.erase("cni.dev/valid-attachments");
  input["cni.dev/attachments"] = json::parse(R"([{"containerID": "a", "ifname": "eth0"}])");
  ASSERT_EQ(run("GC", input.dump()).exitCode, 0);
  input["cni.dev/valid-attachments"] = json::parse(R"([{"containerID": "b", "ifname": "eth0"}])");
  ASSERT_EQ(run("GC", input.dump()).exitCode, 0);
  ASSERT_EQ(agent_.gcRequests.size(), 2u);
  EXPECT_EQ(agent_.gcRequests[0].second, (std::vector<AttachmentKey>{{"a", "eth0"}}));
  EXPECT_EQ(agent_.gcRequests[1].second,
            (std::vector<AttachmentKey>{{"a", "eth0"}, {"b", "eth0"}}));
}

TEST_F(DispatcherTest, GcRefusesAMalformedAttachmentNamingItsField) {
  const auto badId = run("GC", gcConfig(json::parse(R"([{"containerID": "ok", "ifname": "eth0"},
                                     {"containerID": "bad id", "ifname": "eth0"}])"))
                                   .dump());
  EXPECT_EQ(badId.document()["code"], 7);
  EXPECT_TRUE(badId.document()["msg"].get<std::string>().starts_with(
      "cni.dev/valid-attachments[1].containerID: \"bad id\" "))
      << badId.out;
  const auto noIfname = run("GC", gcConfig(json::parse(R"([{"containerID": "ok"}])")).dump());
  EXPECT_EQ(noIfname.document()["msg"], "cni.dev/valid-attachments[0].ifname: missing");
  const auto notAList = run("GC", gcConfig("everything").dump());
  EXPECT_EQ(notAList.document()["code"], 7);
  EXPECT_TRUE(notAList.document()["msg"].get<std::string>().starts_with(
      "cni.dev/valid-attachments: \"everything\" "))
      << notAList.out;
  EXPECT_TRUE(agent_.gcRequests.empty());
}

TEST_F(DispatcherTest, GcIsCode11WhileTheAgentIsDown) {
  agent_.down = true;
  const auto outcome = run("GC", gcConfig(json::array()).dump());
  EXPECT_EQ(outcome.document()["code"], 11);
}

TEST_F(DispatcherTest, GcOfAStandalonePluginSucceedsWithoutAnAgent) {
  auto input = gcConfig(json::parse(R"([{"containerID": "keep", "ifname": "eth0"}])"));
  input["agentSocket"] = "";
  const auto outcome = run("GC", input.dump());
  EXPECT_EQ(outcome.exitCode, 0) << outcome.out;
  EXPECT_TRUE(agentSocketUsed_.empty());
  EXPECT_EQ(rulesetOpened_, 0);
}

}  // namespace
}  // namespace hostport::cni
