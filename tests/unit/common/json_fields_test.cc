#include "common/json_fields.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <limits>
#include <nlohmann/json.hpp>
#include <string>

namespace hostport {
namespace {

using nlohmann::json;
using ::testing::HasSubstr;
using ::testing::Not;

/// A field whose value is `value` (kept alive by the caller) at `path`.
JsonField at(const json& value, std::string path = "f") { return JsonField{&value, path}; }

JsonField absent(std::string path = "f") { return JsonField{nullptr, std::move(path)}; }

template <typename T>
std::string errorOf(const Result<T>& result) {
  if (result.has_value()) return "(no error)";
  return result.error().message;
}

/// A vocabulary of its own, as the agent's PortProtocol is: tcp plus one more name.
enum class TestProtocol { kTcp, kQuic };

Result<TestProtocol> parseTestProtocol(std::string_view text) {
  if (text == "tcp") return TestProtocol::kTcp;
  if (text == "quic") return TestProtocol::kQuic;
  return fail(ErrorCode::kInvalidArgument, "unknown");
}

/// An object nested `depth` levels deep.
json deepObject(int depth) {
  json value = 1;
  for (int i = 0; i < depth; ++i) value = json{{"a", std::move(value)}};
  return value;
}

TEST(JsonFieldsTest, JoinsMemberPathsAndLeavesTheRootBare) {
  EXPECT_EQ(memberPath("", "cniVersion"), "cniVersion");
  EXPECT_EQ(memberPath("runtimeConfig", "portMappings"), "runtimeConfig.portMappings");
  EXPECT_EQ(memberPath(elementPath("runtimeConfig.portMappings", 2), "hostPort"),
            "runtimeConfig.portMappings[2].hostPort");
}

TEST(JsonFieldsTest, JoinsElementPaths) {
  EXPECT_EQ(elementPath("dynamic", 0), "dynamic[0]");
  EXPECT_EQ(memberPath(elementPath("dynamic", 0), "containerPort"), "dynamic[0].containerPort");
  EXPECT_EQ(elementPath(elementPath("a", 1), 12), "a[1][12]");
}

TEST(JsonFieldsTest, TreatsAMissingKeyAndJsonNullAlike) {
  const json object = {{"present", 1}, {"null", nullptr}};

  ASSERT_NE(jsonMember(object, "present"), nullptr);
  EXPECT_EQ(*jsonMember(object, "present"), 1);
  EXPECT_EQ(jsonMember(object, "null"), nullptr);
  EXPECT_EQ(jsonMember(object, "missing"), nullptr);
}

TEST(JsonFieldsTest, FindsNoMemberInAValueThatIsNotAnObject) {
  EXPECT_EQ(jsonMember(json::array({1, 2}), "0"), nullptr);
  EXPECT_EQ(jsonMember(json("text"), "text"), nullptr);
  EXPECT_EQ(jsonMember(json(nullptr), "x"), nullptr);
}

TEST(JsonFieldsTest, ReadsTextOrNothing) {
  const json object = {{"name", "web-0"}, {"port", 80}, {"none", nullptr}};
  EXPECT_EQ(jsonText(object, "name"), "web-0");
  EXPECT_EQ(jsonText(object, "port"), "") << "not a string";
  EXPECT_EQ(jsonText(object, "none"), "");
  EXPECT_EQ(jsonText(object, "missing"), "");
  EXPECT_EQ(jsonText(json("text"), "name"), "") << "not an object";
}

TEST(JsonFieldsTest, LooksUpAFieldWithItsPath) {
  const json object = {{"hostPort", 80}};

  const JsonField field = jsonField(object, "static[1]", "hostPort");
  ASSERT_NE(field.value, nullptr);
  EXPECT_EQ(*field.value, 80);
  EXPECT_EQ(field.path, "static[1].hostPort");
  EXPECT_EQ(jsonField(object, "", "protocol").value, nullptr);
  EXPECT_EQ(jsonField(object, "", "protocol").path, "protocol");
}

TEST(JsonFieldsTest, NamesTheFieldTheValueAndTheProblem) {
  const auto error = invalidValue("dynamic[0].name", json("GRPC"), "must be lowercase");

  EXPECT_EQ(error.error().code, ErrorCode::kInvalidArgument);
  EXPECT_EQ(error.error().message, "dynamic[0].name: \"GRPC\" must be lowercase");
}

TEST(JsonFieldsTest, BuildsAnInvalidValueWithTheCodeItIsGiven) {
  const auto error =
      invalidValue("CNI_COMMAND", json("ADDX"), "is not a verb", ErrorCode::kInvalidEnvironment);

  EXPECT_EQ(error.error().code, ErrorCode::kInvalidEnvironment);
  EXPECT_EQ(error.error().message, "CNI_COMMAND: \"ADDX\" is not a verb");
}

TEST(JsonFieldsTest, BuildsAnInvalidValueOfAField) {
  const json value = 7;

  EXPECT_EQ(invalidValue(at(value, "a.b"), "is odd").error().message, "a.b: 7 is odd");
}

TEST(JsonFieldsTest, SaysWhichFieldIsMissing) {
  const auto error = missingValue("runtimeConfig.portMappings[0].hostPort");

  EXPECT_EQ(error.error().code, ErrorCode::kInvalidArgument);
  EXPECT_EQ(error.error().message, "runtimeConfig.portMappings[0].hostPort: missing");
}

TEST(JsonFieldsTest, EchoesObjectsAndArraysWithoutTheirContent) {
  EXPECT_EQ(invalidValue("f", json{{"secret", "x"}}, "is bad").error().message, "f: {...} is bad");
  EXPECT_EQ(invalidValue("f", json::array({"secret"}), "is bad").error().message,
            "f: [...] is bad");
}

TEST(JsonFieldsTest, EchoesADeeplyNestedValueAsOneShortToken) {
  const json deep = deepObject(10000);

  EXPECT_EQ(errorOf(readString(at(deep))), "f: {...} must be a string");
}

TEST(JsonFieldsTest, CutsAHugeStringValue) {
  const json huge = std::string(1 << 20, 'x');

  const std::string message = errorOf(readPort(at(huge)));

  EXPECT_EQ(message, "f: \"" + std::string(64, 'x') + "\"... must be an integer 1..65535");
}

TEST(JsonFieldsTest, EscapesAValueThatCouldForgeALogLine) {
  const json hostile = "tcp\"\nERROR forged";

  const std::string message = errorOf(readProtocol(at(hostile, "protocol")));

  EXPECT_EQ(message, "protocol: \"tcp\\\"\\nERROR forged\" is not tcp, udp or sctp");
  EXPECT_THAT(message, Not(HasSubstr("\n")));
}

TEST(JsonFieldsTest, ReadsARequiredString) {
  const json text = "eth0";
  const json null = nullptr;

  EXPECT_EQ(readString(at(text)), "eth0");
  EXPECT_EQ(errorOf(readString(absent("ifname"))), "ifname: missing");
  // A present null is refused as the value it is; jsonField() turns a null member into absent.
  EXPECT_EQ(errorOf(readString(at(null, "ifname"))), "ifname: null must be a string");
  EXPECT_EQ(errorOf(readString(jsonField(json{{"ifname", nullptr}}, "", "ifname"))),
            "ifname: missing");
}

TEST(JsonFieldsTest, ReadsAnOptionalStringWithItsFallback) {
  const json empty = "";

  EXPECT_EQ(readString(absent(), "default"), "default");
  EXPECT_EQ(readString(at(empty), "default"), "") << "an explicit \"\" is not absent";
  EXPECT_EQ(readString(jsonField(json{{"name", nullptr}}, "", "name"), "x"), "x");
}

TEST(JsonFieldsTest, RefusesAStringOfTheWrongType) {
  for (const json& value : {json(5), json(true), json(1.5), json::array(), json::object()}) {
    EXPECT_THAT(errorOf(readString(at(value, "name"), "")), HasSubstr("must be a string"))
        << value.dump();
  }
  EXPECT_EQ(errorOf(readString(at(json(1.0), "cniVersion"))), "cniVersion: 1.0 must be a string");
}

TEST(JsonFieldsTest, ReadsABool) {
  const json yes = true;
  const json no = false;

  EXPECT_EQ(readBool(at(yes), false), true);
  EXPECT_EQ(readBool(at(no), true), false);
  EXPECT_EQ(readBool(absent(), true), true);
  EXPECT_EQ(readBool(absent(), false), false);
}

TEST(JsonFieldsTest, RefusesABoolOfTheWrongType) {
  EXPECT_EQ(errorOf(readBool(at(json("false"), "snat"), true)),
            "snat: \"false\" must be true or false");
  EXPECT_EQ(errorOf(readBool(at(json(1), "masqAll"), false)), "masqAll: 1 must be true or false");
  EXPECT_EQ(errorOf(readBool(at(json::object(), "static"), false)),
            "static: {...} must be true or false");
}

TEST(JsonFieldsTest, ReadsAnIntegerInItsRange) {
  EXPECT_EQ(readInteger(at(json(0)), 0, 10), 0u);
  EXPECT_EQ(readInteger(at(json(10)), 0, 10), 10u);
  const uint64_t max = std::numeric_limits<uint64_t>::max();
  EXPECT_EQ(readInteger(at(json(max)), 0, max), max);
  EXPECT_EQ(readInteger(at(json(int64_t{7})), 1, 9), 7u) << "a signed JSON integer";
}

TEST(JsonFieldsTest, RefusesAnIntegerOutsideItsRangeNamingTheRange) {
  EXPECT_EQ(errorOf(readInteger(at(json(0), "count"), 1, 1024)),
            "count: 0 must be an integer 1..1024");
  EXPECT_EQ(errorOf(readInteger(at(json(1025), "count"), 1, 1024)),
            "count: 1025 must be an integer 1..1024");
  EXPECT_EQ(errorOf(readInteger(at(json(-1), "size"), 0, 4294967295)),
            "size: -1 must be an integer 0..4294967295");
  EXPECT_EQ(errorOf(readInteger(at(json(std::numeric_limits<int64_t>::min()), "n"), 0, 5)),
            "n: -9223372036854775808 must be an integer 0..5");
}

TEST(JsonFieldsTest, RefusesWhatIsNotAJsonInteger) {
  for (const json& value : {json("80"), json(80.0), json(80.5), json(1e20), json(true),
                            json::array({80}), json::object()}) {
    EXPECT_THAT(errorOf(readInteger(at(value), 1, 100)), HasSubstr("must be an integer 1..100"))
        << value.dump();
  }
}

TEST(JsonFieldsTest, ReadsAnOptionalIntegerWithItsFallback) {
  EXPECT_EQ(readInteger(absent(), 1, 1024, 1), 1u);
  EXPECT_EQ(readInteger(at(json(5)), 1, 1024, 1), 5u);
  EXPECT_EQ(errorOf(readInteger(absent("size"), 0, 10)), "size: missing");
}

TEST(JsonFieldsTest, ReadsPortsFromOneTo65535) {
  EXPECT_EQ(readPort(at(json(1))), 1);
  EXPECT_EQ(readPort(at(json(8080))), 8080);
  EXPECT_EQ(readPort(at(json(65535))), 65535);
}

TEST(JsonFieldsTest, RefusesEveryOtherPortWithOneMessage) {
  const std::string path = "dynamic[0].containerPort";
  EXPECT_EQ(errorOf(readPort(at(json(0), path))), path + ": 0 must be an integer 1..65535");
  EXPECT_EQ(errorOf(readPort(at(json(65536), path))), path + ": 65536 must be an integer 1..65535");
  EXPECT_EQ(errorOf(readPort(at(json(-80), path))), path + ": -80 must be an integer 1..65535");
  EXPECT_EQ(errorOf(readPort(at(json("80"), path))), path + ": \"80\" must be an integer 1..65535");
  EXPECT_EQ(errorOf(readPort(at(json(80.0), path))), path + ": 80.0 must be an integer 1..65535");
  EXPECT_EQ(errorOf(readPort(absent(path))), path + ": missing");
}

TEST(JsonFieldsTest, ReadsAnArrayWithinItsLimit) {
  const json three = json::array({1, 2, 3});

  const auto read = readArray(at(three), 3);
  ASSERT_TRUE(read.has_value()) << read.error().message;
  EXPECT_EQ(*read, &three);
  EXPECT_EQ(errorOf(readArray(at(three, "ports"), 2)), "ports: 3 entries exceed the limit of 2");
}

TEST(JsonFieldsTest, RefusesAnArrayOfTheWrongTypeOrAbsentWhenRequired) {
  EXPECT_EQ(errorOf(readArray(at(json::object(), "static"), 5)), "static: {...} must be an array");
  EXPECT_EQ(errorOf(readArray(at(json("a,b"), "static"), 5)), "static: \"a,b\" must be an array");
  EXPECT_EQ(errorOf(readArray(absent("valid"), 5)), "valid: missing");
}

TEST(JsonFieldsTest, ReadsAnAbsentOptionalArrayAsEmpty) {
  const auto read = readArrayOrEmpty(jsonField(json{{"ips", nullptr}}, "prevResult", "ips"), 5);

  ASSERT_TRUE(read.has_value()) << read.error().message;
  ASSERT_NE(*read, nullptr);
  EXPECT_TRUE((*read)->is_array());
  EXPECT_TRUE((*read)->empty());
  EXPECT_EQ(errorOf(readArrayOrEmpty(at(json(3), "prevResult.interfaces"), 5)),
            "prevResult.interfaces: 3 must be an array");
}

TEST(JsonFieldsTest, ReadsProtocolsInAnyCase) {
  EXPECT_EQ(readProtocol(at(json("tcp"))), Protocol::kTcp);
  EXPECT_EQ(readProtocol(at(json("UDP"))), Protocol::kUdp);
  EXPECT_EQ(readProtocol(at(json("Sctp"))), Protocol::kSctp);
}

TEST(JsonFieldsTest, ReadsAnAbsentOrEmptyProtocolAsTcp) {
  EXPECT_EQ(readProtocol(absent()), Protocol::kTcp);
  EXPECT_EQ(readProtocol(at(json(""))), Protocol::kTcp);
  EXPECT_EQ(readProtocol(jsonField(json{{"protocol", nullptr}}, "", "protocol")), Protocol::kTcp);
}

TEST(JsonFieldsTest, RefusesAnUnknownProtocolNamingTheAcceptedOnes) {
  EXPECT_EQ(errorOf(readProtocol(at(json("icmp"), "protocol"))),
            "protocol: \"icmp\" is not tcp, udp or sctp");
  EXPECT_EQ(errorOf(readProtocol(at(json("tcpudp"), "protocol"))),
            "protocol: \"tcpudp\" is not tcp, udp or sctp");
  EXPECT_EQ(errorOf(readProtocol(at(json(6), "protocol"))), "protocol: 6 must be a string");
}

TEST(JsonFieldsTest, ReadsAProtocolOfAnotherVocabularyThroughItsParser) {
  EXPECT_EQ(readProtocolWith(at(json("quic")), parseTestProtocol, "tcp or quic"),
            TestProtocol::kQuic);
  EXPECT_EQ(readProtocolWith(absent(), parseTestProtocol, "tcp or quic"), TestProtocol::kTcp);
  EXPECT_EQ(errorOf(readProtocolWith(at(json("udp"), "p"), parseTestProtocol, "tcp or quic")),
            "p: \"udp\" is not tcp or quic");
  EXPECT_EQ(errorOf(readProtocolWith(at(json(""), "p"), parseTestProtocol, "tcp or quic")),
            "p: \"\" is not tcp or quic")
      << "only readProtocol reads \"\" as tcp";
  EXPECT_EQ(errorOf(readProtocolWith(at(json::array(), "p"), parseTestProtocol, "tcp or quic")),
            "p: [...] must be a string");
}

TEST(JsonFieldsTest, ReadsAHostIp) {
  const auto v4 = readHostIp(at(json("192.0.2.10")));
  ASSERT_TRUE(v4.has_value()) << v4.error().message;
  EXPECT_EQ(*v4, IpAddress::parse("192.0.2.10").value());
  const auto v6 = readHostIp(at(json("2001:DB8::1")));
  ASSERT_TRUE(v6.has_value()) << v6.error().message;
  EXPECT_EQ(*v6, IpAddress::parse("2001:db8::1").value());
}

TEST(JsonFieldsTest, ReadsEveryWayOfSayingAnyAddressAsNone) {
  for (const json& value : {json(""), json("0.0.0.0"), json("::"), json("0:0::0")}) {
    const auto read = readHostIp(at(value));
    ASSERT_TRUE(read.has_value()) << value.dump() << ": " << read.error().message;
    EXPECT_EQ(*read, std::nullopt) << value.dump();
  }
  EXPECT_EQ(readHostIp(absent()).value(), std::nullopt);
  EXPECT_EQ(readHostIp(jsonField(json{{"hostIP", nullptr}}, "", "hostIP")).value(), std::nullopt);
}

TEST(JsonFieldsTest, RefusesAHostIpThatIsNotAnAddress) {
  EXPECT_EQ(errorOf(readHostIp(at(json("10.0.0.300"), "hostIP"))),
            "hostIP: \"10.0.0.300\" is not an IP address");
  EXPECT_EQ(errorOf(readHostIp(at(json(3232235521), "hostIP"))),
            "hostIP: 3232235521 must be a string");
  EXPECT_EQ(errorOf(readHostIp(at(deepObject(100), "hostIP"))), "hostIP: {...} must be a string");
}

}  // namespace
}  // namespace hostport
