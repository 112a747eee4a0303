#include "cni-plugin/cni_version.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "cni-plugin/prev_result.h"
#include "tests/unit/cni-plugin/bridge_result.h"

namespace hostport::cni {
namespace {

using nlohmann::json;
using ::testing::ElementsAre;
using ::testing::HasSubstr;

json resultV110() { return testing::bridgeResult("1.1.0"); }

/// The same result in 0.3.1 shape, as a 0.3.1 bridge plugin prints it.
json resultV031() {
  json result = resultV110();
  result["cniVersion"] = "0.3.1";
  result["ips"][0]["version"] = "4";
  result["ips"][1]["version"] = "6";
  return result;
}

Error conversionError(const json& result, std::string_view version) {
  const auto converted = convertResult(result, version);
  EXPECT_FALSE(converted.has_value()) << converted->dump();
  return converted ? Error{} : converted.error();
}

TEST(CniVersionTest, ListsTheVersionsWeSpeakInAscendingOrder) {
  EXPECT_THAT(supportedVersions(), ElementsAre("0.3.0", "0.3.1", "0.4.0", "1.0.0", "1.1.0"));
}

TEST(CniVersionTest, SupportsOnlyListedVersionsSpelledExactly) {
  EXPECT_TRUE(isSupported("0.3.1"));
  EXPECT_TRUE(isSupported("1.1.0"));
  EXPECT_FALSE(isSupported("0.2.0"));
  EXPECT_FALSE(isSupported("1.1"));
  EXPECT_FALSE(isSupported("1.1.0 "));
  EXPECT_FALSE(isSupported("2.0.0"));
  EXPECT_FALSE(isSupported(""));
}

TEST(CniVersionTest, ComparesVersionsNumericallyByComponent) {
  EXPECT_GT(compareVersions("0.10.0", "0.4.0"), 0);
  EXPECT_LT(compareVersions("0.4.0", "0.10.0"), 0);
  EXPECT_LT(compareVersions("0.4.0", "1.0.0"), 0);
  EXPECT_GT(compareVersions("1.1.0", "1.0.0"), 0);
  EXPECT_LT(compareVersions("0.3.0", "0.3.1"), 0);
  EXPECT_EQ(compareVersions("1.0.0", "1.0.0"), 0);
}

TEST(CniVersionTest, TreatsMissingComponentsAsZero) {
  EXPECT_EQ(compareVersions("1.1", "1.1.0"), 0);
  EXPECT_LT(compareVersions("1", "1.0.1"), 0);
}

TEST(CniVersionTest, OrdersEverySupportedVersionAfterThePreviousOne) {
  const auto& versions = supportedVersions();
  for (size_t i = 1; i < versions.size(); ++i) {
    EXPECT_LT(compareVersions(versions[i - 1], versions[i]), 0) << versions[i];
  }
}

TEST(CniVersionTest, AddsIpVersionsFromTheAddressWhenConvertingToZeroThreeOne) {
  const auto converted = convertResult(resultV110(), "0.3.1");

  ASSERT_TRUE(converted.has_value()) << converted.error().message;
  EXPECT_EQ(*converted, resultV031());
  EXPECT_EQ((*converted)["ips"][0]["version"], "4");
  EXPECT_EQ((*converted)["ips"][1]["version"], "6");
}

TEST(CniVersionTest, RemovesIpVersionsWhenConvertingToOneOne) {
  const auto converted = convertResult(resultV031(), "1.1.0");

  ASSERT_TRUE(converted.has_value()) << converted.error().message;
  EXPECT_EQ(*converted, resultV110());
  EXPECT_FALSE((*converted)["ips"][0].contains("version"));
}

TEST(CniVersionTest, KeepsInterfacesRoutesAndDnsUntouched) {
  const json original = resultV110();

  const auto converted = convertResult(original, "0.4.0");

  ASSERT_TRUE(converted.has_value()) << converted.error().message;
  EXPECT_EQ((*converted)["interfaces"], original["interfaces"]);
  EXPECT_EQ((*converted)["routes"], original["routes"]);
  EXPECT_EQ((*converted)["dns"], original["dns"]);
  EXPECT_EQ((*converted)["ips"][0]["gateway"], "10.88.0.1");
  EXPECT_EQ((*converted)["ips"][1]["interface"], 2);
}

TEST(CniVersionTest, RoundTripsBetweenZeroThreeOneAndOneOne) {
  const auto up = convertResult(resultV031(), "1.1.0");
  ASSERT_TRUE(up.has_value());
  const auto down = convertResult(*up, "0.3.1");

  ASSERT_TRUE(down.has_value()) << down.error().message;
  EXPECT_EQ(*down, resultV031());
}

TEST(CniVersionTest, KeepsAnIpVersionThatIsAlreadyPresent) {
  json result = resultV110();
  result["ips"][0]["version"] = "4";
  result["ips"][1]["version"] = "6";

  const auto converted = convertResult(result, "0.4.0");

  ASSERT_TRUE(converted.has_value());
  EXPECT_EQ((*converted)["ips"], result["ips"]);
  EXPECT_EQ((*converted)["cniVersion"], "0.4.0");
}

TEST(CniVersionTest, SetsTheRequestedCniVersion) {
  for (const auto& version : supportedVersions()) {
    const auto converted = convertResult(resultV110(), version);

    ASSERT_TRUE(converted.has_value()) << version;
    EXPECT_EQ((*converted)["cniVersion"], version);
  }
}

TEST(CniVersionTest, ConvertsAResultWithoutIps) {
  const json result = {{"cniVersion", "1.0.0"}, {"dns", json::object()}};

  const auto converted = convertResult(result, "0.3.0");

  ASSERT_TRUE(converted.has_value()) << converted.error().message;
  EXPECT_EQ(*converted, (json{{"cniVersion", "0.3.0"}, {"dns", json::object()}}));
}

TEST(CniVersionTest, RejectsAnUnsupportedTargetVersion) {
  const Error error = conversionError(resultV110(), "0.2.0");

  EXPECT_EQ(error.code, ErrorCode::kIncompatibleVersion);
  EXPECT_EQ(error.message,
            "cniVersion: \"0.2.0\" is not supported (supported: 0.3.0, 0.3.1, 0.4.0, 1.0.0, "
            "1.1.0)");
}

TEST(CniVersionTest, RejectsAnIpAddressWithoutPrefixLength) {
  json result = resultV110();
  result["ips"][1]["address"] = "fd00:88::5";

  const Error error = conversionError(result, "0.3.1");

  EXPECT_EQ(error.code, ErrorCode::kInvalidArgument);
  EXPECT_EQ(error.message,
            "prevResult.ips[1].address: \"fd00:88::5\" is not a CIDR such as \"10.88.0.5/16\"");
}

TEST(CniVersionTest, RejectsMalformedIpsInEitherDirection) {
  for (const std::string_view version : {"0.3.1", "1.1.0"}) {
    json notArray = resultV110();
    notArray["ips"] = "10.88.0.5/16";
    json notObject = resultV110();
    notObject["ips"][0] = 7;
    json noAddress = resultV110();
    noAddress["ips"][0].erase("address");

    EXPECT_EQ(conversionError(notArray, version).message,
              "prevResult.ips: \"10.88.0.5/16\" must be an array");
    EXPECT_EQ(conversionError(notObject, version).message,
              "prevResult.ips[0]: 7 must be an object");
    EXPECT_EQ(conversionError(noAddress, version).message, "prevResult.ips[0].address: missing");
  }
}

TEST(CniVersionTest, ConvertsWithResultAddressesReadOnceAsWithoutThem) {
  for (const json& result : {resultV110(), resultV031()}) {
    const auto addresses = resultAddresses(result);
    ASSERT_TRUE(addresses.has_value());
    for (const auto& version : supportedVersions()) {
      const auto converted = convertResult(result, *addresses, version);

      ASSERT_TRUE(converted.has_value()) << version;
      EXPECT_EQ(*converted, *convertResult(result, version)) << version;
    }
    const auto unsupported = convertResult(result, *addresses, "0.2.0");
    ASSERT_FALSE(unsupported.has_value());
    EXPECT_EQ(unsupported.error().message, conversionError(result, "0.2.0").message);
  }
}

TEST(CniVersionTest, RejectsAResultThatIsNotAnObject) {
  const Error error = conversionError(json::array(), "1.0.0");

  EXPECT_EQ(error.code, ErrorCode::kInvalidArgument);
  EXPECT_THAT(error.message, HasSubstr("prevResult: [...] must be an object"));
}

}  // namespace
}  // namespace hostport::cni
