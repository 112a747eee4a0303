#include "cni-plugin/prev_result.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <string>

#include "tests/unit/cni-plugin/bridge_result.h"

namespace hostport::cni {
namespace {

using nlohmann::json;
using ::testing::HasSubstr;
using ::testing::Not;

IpPrefix prefix(std::string_view cidr) { return *IpPrefix::parse(cidr); }

/// What the bridge plugin reports: the bridge and the host-side veth have no sandbox; the
/// container's eth0 (index 2) does.
json bridgeResult() { return testing::bridgeResult("1.0.0"); }

ContainerAddresses addressesOf(const json& prevResult, std::string_view ifname = "eth0") {
  const auto addresses = containerAddresses(prevResult, ifname);
  EXPECT_TRUE(addresses.has_value()) << addresses.error().message;
  return addresses.value_or(ContainerAddresses{});
}

std::string errorOf(const json& prevResult) {
  const auto addresses = containerAddresses(prevResult, "eth0");
  EXPECT_FALSE(addresses.has_value());
  if (addresses) return "";
  EXPECT_EQ(addresses.error().code, ErrorCode::kInvalidArgument);
  return addresses.error().message;
}

TEST(PrevResultTest, PicksBothFamiliesOnTheContainerInterface) {
  const auto addresses = addressesOf(bridgeResult());

  EXPECT_EQ(addresses.v4, prefix("10.88.0.5/16"));
  EXPECT_EQ(addresses.v6, prefix("fd00:88::5/64"));
  EXPECT_FALSE(addresses.empty());
}

TEST(PrevResultTest, SkipsAddressesOnTheHostSideVethWithoutSandbox) {
  json result = bridgeResult();
  // A plugin that reports an address on the host veth first must not make it the DNAT target.
  result["ips"].insert(result["ips"].begin(),
                       json{{"interface", 1}, {"address", "169.254.1.1/32"}});
  result["ips"].insert(result["ips"].begin(), json{{"interface", 0}, {"address", "10.88.0.1/16"}});

  const auto addresses = addressesOf(result);

  EXPECT_EQ(addresses.v4, prefix("10.88.0.5/16"));
}

TEST(PrevResultTest, SkipsAnInterfaceNamedLikeOursWithoutSandbox) {
  json result = bridgeResult();
  result["interfaces"].push_back(json{{"name", "eth0"}});
  result["interfaces"].push_back(json{{"name", "eth0"}, {"sandbox", ""}});
  result["ips"] = {{{"interface", 3}, {"address", "192.0.2.1/24"}},
                   {{"interface", 4}, {"address", "192.0.2.2/24"}}};

  EXPECT_TRUE(addressesOf(result).empty());
}

TEST(PrevResultTest, SkipsAddressesOfOtherContainerInterfaces) {
  json result = bridgeResult();
  result["interfaces"].push_back(json{{"name", "net1"}, {"sandbox", "/var/run/netns/cni-1"}});
  result["ips"].insert(result["ips"].begin(), json{{"interface", 3}, {"address", "172.16.0.9/24"}});

  EXPECT_EQ(addressesOf(result).v4, prefix("10.88.0.5/16"));
  EXPECT_EQ(addressesOf(result, "net1").v4, prefix("172.16.0.9/24"));
  EXPECT_EQ(addressesOf(result, "net1").v6, std::nullopt);
}

TEST(PrevResultTest, SkipsAddressesWhoseInterfaceIndexIsOutOfRange) {
  json result = bridgeResult();
  result["ips"] = {{{"interface", 3}, {"address", "192.0.2.1/24"}},
                   {{"interface", -1}, {"address", "192.0.2.2/24"}},
                   {{"interface", 2}, {"address", "10.88.0.5/16"}}};

  const auto addresses = addressesOf(result);

  EXPECT_EQ(addresses.v4, prefix("10.88.0.5/16"));
  EXPECT_EQ(addresses.v6, std::nullopt);
}

TEST(PrevResultTest, SkipsIndexedAddressesWhenThereAreNoInterfaces) {
  json result = bridgeResult();
  result.erase("interfaces");

  EXPECT_TRUE(addressesOf(result).empty());
}

TEST(PrevResultTest, TakesAddressesWithoutInterfaceIndex) {
  const json result = {
      {"ips",
       {{{"address", "10.88.0.7/16"}}, {{"address", "fd00::7/64"}, {"interface", nullptr}}}}};

  const auto addresses = addressesOf(result);

  EXPECT_EQ(addresses.v4, prefix("10.88.0.7/16"));
  EXPECT_EQ(addresses.v6, prefix("fd00::7/64"));
}

TEST(PrevResultTest, TakesTheFirstAddressOfEachFamily) {
  json result = bridgeResult();
  result["ips"].push_back(json{{"interface", 2}, {"address", "10.88.0.99/16"}});
  result["ips"].push_back(json{{"interface", 2}, {"address", "fd00:88::99/64"}});

  const auto addresses = addressesOf(result);

  EXPECT_EQ(addresses.v4, prefix("10.88.0.5/16"));
  EXPECT_EQ(addresses.v6, prefix("fd00:88::5/64"));
}

TEST(PrevResultTest, DerivesTheFamilyFromTheAddressNotTheVersionField) {
  const json result = {{"ips", {{{"version", "4"}, {"address", "fd00::7/64"}}}}};

  const auto addresses = addressesOf(result);

  EXPECT_EQ(addresses.v4, std::nullopt);
  EXPECT_EQ(addresses.v6, prefix("fd00::7/64"));
}

TEST(PrevResultTest, ReturnsNoAddressesWhenIpsAreAbsentOrNull) {
  EXPECT_TRUE(addressesOf(json::object()).empty());
  EXPECT_TRUE(addressesOf({{"ips", nullptr}}).empty());
  EXPECT_TRUE(addressesOf({{"ips", json::array()}}).empty());
}

TEST(PrevResultTest, ListsEveryResultAddressInOrder) {
  const auto addresses = resultAddresses(bridgeResult());

  ASSERT_TRUE(addresses.has_value());
  EXPECT_EQ(*addresses, (std::vector{prefix("10.88.0.5/16"), prefix("fd00:88::5/64")}));
}

TEST(PrevResultTest, PicksTheSameAddressesFromResultAddressesReadOnce) {
  json otherInterface = bridgeResult();
  otherInterface["interfaces"][2]["name"] = "net1";
  for (const json& prevResult : {bridgeResult(), otherInterface}) {
    const auto read = resultAddresses(prevResult);
    ASSERT_TRUE(read.has_value());

    const auto picked = containerAddresses(prevResult, *read, "eth0");

    ASSERT_TRUE(picked.has_value()) << picked.error().message;
    EXPECT_EQ(picked->v4, addressesOf(prevResult).v4);
    EXPECT_EQ(picked->v6, addressesOf(prevResult).v6);
  }
}

TEST(PrevResultTest, RejectsAPrevResultThatIsNotAnObject) {
  EXPECT_EQ(errorOf("10.88.0.5/16"), "prevResult: \"10.88.0.5/16\" must be an object");
  EXPECT_EQ(errorOf(json::array()), "prevResult: [...] must be an object");
}

TEST(PrevResultTest, RejectsIpsAndInterfacesThatAreNotArrays) {
  EXPECT_EQ(errorOf({{"ips", {{"address", "10.88.0.5/16"}}}}),
            "prevResult.ips: {...} must be an array");
  EXPECT_EQ(errorOf({{"ips", json::array()}, {"interfaces", 3}}),
            "prevResult.interfaces: 3 must be an array");
}

TEST(PrevResultTest, RejectsMalformedIpEntries) {
  EXPECT_EQ(errorOf({{"ips", {"10.88.0.5/16"}}}),
            "prevResult.ips[0]: \"10.88.0.5/16\" must be an object");
  EXPECT_EQ(errorOf({{"ips", {{{"gateway", "10.88.0.1"}}}}}), "prevResult.ips[0].address: missing");
  EXPECT_EQ(errorOf({{"ips", {{{"address", 167772165}}}}}),
            "prevResult.ips[0].address: 167772165 must be a string");
}

TEST(PrevResultTest, RejectsAddressesThatAreNotCidrs) {
  for (const std::string address : {"10.88.0.5", "10.88.0.5/33", "10.88.0/16", "eth0", ""}) {
    EXPECT_EQ(
        errorOf({{"ips", {{{"address", address}}}}}),
        "prevResult.ips[0].address: \"" + address + "\" is not a CIDR such as \"10.88.0.5/16\"");
  }
}

TEST(PrevResultTest, RejectsAnInterfaceIndexThatIsNotAnInteger) {
  json result = bridgeResult();
  result["ips"][1]["interface"] = "2";

  EXPECT_EQ(errorOf(result), "prevResult.ips[1].interface: \"2\" must be an integer");

  result["ips"][1]["interface"] = 2.0;
  EXPECT_EQ(errorOf(result), "prevResult.ips[1].interface: 2.0 must be an integer");
}

TEST(PrevResultTest, RejectsMalformedInterfaceEntriesItPointsAt) {
  json result = bridgeResult();
  result["interfaces"][2] = "eth0";
  EXPECT_EQ(errorOf(result), "prevResult.interfaces[2]: \"eth0\" must be an object");

  result["interfaces"][2] = {{"name", 0}, {"sandbox", "/var/run/netns/cni-1"}};
  EXPECT_EQ(errorOf(result), "prevResult.interfaces[2].name: 0 must be a string");

  result["interfaces"][2] = {{"name", "eth0"}, {"sandbox", true}};
  EXPECT_EQ(errorOf(result), "prevResult.interfaces[2].sandbox: true must be a string");
}

TEST(PrevResultTest, EscapesAndTruncatesHostileAddressesInMessages) {
  const std::string hostile = "10.0.0.1/8\"\n; flush ruleset" + std::string(4096, 'A');

  const std::string message = errorOf({{"ips", {{{"address", hostile}}}}});

  EXPECT_THAT(message, HasSubstr("prevResult.ips[0].address: \"10.0.0.1/8\\\"\\n; flush ruleset"));
  EXPECT_THAT(message, Not(HasSubstr("\n")));
  EXPECT_LT(message.size(), 200u);
}

// Item 4 and 6 of issue 29: an address no pod has, or a prefix no pod subnet has, is refused
// where it is picked, naming the field and the value (common/pod_address.h has the classes).
TEST(PrevResultTest, RefusesAContainerAddressNoPodHasNamingTheField) {
  const std::vector<std::pair<std::string, std::string>> refused = {
      {"127.0.0.1/8", "loopback"},
      {"127.0.0.1/32", "loopback"},
      {"0.0.0.0/0", "0.0.0.0/8"},
      {"0.0.0.0/32", "0.0.0.0/8"},
      {"10.88.0.5/0", "wider than /8"},
      {"10.88.0.5/4", "wider than /8"},
      {"169.254.169.254/16", "link-local"},
      {"224.0.0.5/24", "multicast"},
      {"255.255.255.255/32", "broadcast"},
      {"10.88.255.255/16", "broadcast"},
      {"10.88.0.0/16", "network address"},
      {"::1/128", "loopback"},
      {"::/0", "unspecified"},
      {"fe80::5/64", "link-local"},
      {"ff02::1/64", "multicast"},
      {"::ffff:127.0.0.1/96", "IPv4-mapped"},
      {"fd00:88::5/0", "wider than /48"},
      {"fd00:88::/64", "Subnet-Router"},
  };
  for (const auto& [address, says] : refused) {
    json result = bridgeResult();
    const bool v6 = address.find(':') != std::string::npos;
    result["ips"][v6 ? 1 : 0]["address"] = address;

    const std::string message = errorOf(result);

    EXPECT_THAT(message, HasSubstr("prevResult.ips[" + std::string(v6 ? "1" : "0") +
                                   "].address: \"" + address + "\" "))
        << address;
    EXPECT_THAT(message, HasSubstr(says)) << address;
  }
}

// Only what becomes a target is judged: the host side's addresses are skipped, as before.
TEST(PrevResultTest, JudgesOnlyTheAddressesItPicks) {
  json result = bridgeResult();
  result["ips"].insert(result["ips"].begin(), json{{"interface", 1}, {"address", "127.0.0.1/8"}});
  result["ips"].push_back(json{{"interface", 3}, {"address", "0.0.0.0/0"}});

  EXPECT_EQ(addressesOf(result).v4, prefix("10.88.0.5/16"));
}

// Item 8 of issue 29: every shape of prevResult that names no address on the attachment's
// interface inside the sandbox leaves a pod with ports nowhere to forward them: an error that
// says what is missing.
TEST(PrevResultTest, RequiresAContainerAddressForEveryShapeThatNamesNone) {
  const auto withIndex = [](json index) {
    json result = bridgeResult();
    for (auto& ip : result["ips"]) ip["interface"] = index;
    return result;
  };
  json withoutSandbox = bridgeResult();
  withoutSandbox["interfaces"][2].erase("sandbox");
  json emptySandbox = bridgeResult();
  emptySandbox["interfaces"][2]["sandbox"] = "";
  const json v020 = json::parse(R"({"cniVersion": "0.2.0",
      "ip4": {"ip": "10.88.0.5/16", "gateway": "10.88.0.1"},
      "ip6": {"ip": "fd00:88::5/64"}})");
  const std::vector<std::pair<std::string, json>> shapes = {
      {"interface 99", withIndex(99)},
      {"interface -1", withIndex(-1)},
      {"interface 2^63", withIndex(json(uint64_t{1} << 63))},
      {"interface without sandbox", withoutSandbox},
      {"interface with an empty sandbox", emptySandbox},
      {"0.2.0 shape", v020},
      {"no ips", json::object()},
  };
  for (const auto& [shape, result] : shapes) {
    const ContainerAddresses addresses = addressesOf(result);
    EXPECT_TRUE(addresses.empty()) << shape;

    const auto required = requireContainerAddress(addresses, "eth0");

    ASSERT_FALSE(required) << shape;
    EXPECT_EQ(required.error().code, ErrorCode::kInvalidArgument);
    EXPECT_THAT(required.error().message,
                HasSubstr("prevResult names no address on interface eth0 inside the sandbox"))
        << shape;
  }
  // A CNI_IFNAME the result does not name.
  EXPECT_TRUE(addressesOf(bridgeResult(), "net1").empty());
  EXPECT_THAT(requireContainerAddress(addressesOf(bridgeResult(), "net1"), "net1").error().message,
              HasSubstr("no address on interface net1"));
  EXPECT_TRUE(requireContainerAddress(addressesOf(bridgeResult()), "eth0"));
}

}  // namespace
}  // namespace hostport::cni
