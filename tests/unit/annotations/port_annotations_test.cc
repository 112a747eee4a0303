#include "annotations/port_annotations.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

namespace hostport::annotations {
namespace {

using nlohmann::json;
using ::testing::AllOf;
using ::testing::HasSubstr;
using ::testing::Not;

Result<PortAnnotations> parsePorts(const std::string& value) {
  return parsePortAnnotations(json{{"hostport.io/ports", value}});
}

/// The error message of a parse that must fail with kInvalidArgument.
std::string errorOf(const Result<PortAnnotations>& result) {
  EXPECT_FALSE(result.has_value());
  if (result.has_value()) return {};
  EXPECT_EQ(result.error().code, ErrorCode::kInvalidArgument);
  return result.error().message;
}

std::string portsError(const std::string& value) { return errorOf(parsePorts(value)); }

TEST(PortAnnotationsTest, ParsesTheDesignExample) {
  const auto parsed = parsePortAnnotations(
      json{{"hostport.io/ports",
            "grpc=19805, health=9090/tcp, voice=7777/udp, rtp=20000-20009/udp, game=7000/tcpudp"},
           {"hostport.io/pool", "fast"}});
  ASSERT_TRUE(parsed.has_value()) << parsed.error().message;
  const std::vector<DynamicPortRequest> expected = {
      {"grpc", 19805, 1, PortProtocol::kTcp},   {"health", 9090, 1, PortProtocol::kTcp},
      {"voice", 7777, 1, PortProtocol::kUdp},   {"rtp", 20000, 10, PortProtocol::kUdp},
      {"game", 7000, 1, PortProtocol::kTcpUdp},
  };
  EXPECT_EQ(parsed->dynamics, expected);
  EXPECT_EQ(parsed->pool, "fast");
}

TEST(PortAnnotationsTest, NoAnnotationsAskForNothing) {
  for (const json& annotations :
       {json::object(), json(nullptr),
        json{{"io.kubernetes.cri.sandbox-id", "abc"}, {"kubectl.kubernetes.io/x", 5}},
        json{{"hostport.io/ports", nullptr}, {"hostport.io/pool", nullptr}}}) {
    const auto parsed = parsePortAnnotations(annotations);
    ASSERT_TRUE(parsed.has_value()) << annotations.dump();
    EXPECT_EQ(*parsed, PortAnnotations{}) << annotations.dump();
  }
}

TEST(PortAnnotationsTest, IgnoresOtherHostportKeysEvenWhenNotStrings) {
  const auto parsed = parsePortAnnotations(
      json{{"hostport.io/other", json::array()}, {"hostport.io/ports", "a=1"}});
  ASSERT_TRUE(parsed.has_value());
  EXPECT_EQ(parsed->dynamics.size(), 1u);
}

TEST(PortAnnotationsTest, EmptyOrBlankPortsValueAsksForNothing) {
  for (const std::string value : {"", " ", "\t\n "}) {
    const auto parsed = parsePorts(value);
    ASSERT_TRUE(parsed.has_value()) << value;
    EXPECT_TRUE(parsed->dynamics.empty());
  }
}

TEST(PortAnnotationsTest, IgnoresBlanksAroundEntries) {
  const auto parsed = parsePorts("  a=1,\tb=2/udp ,\n c=3-4\r\n");
  ASSERT_TRUE(parsed.has_value()) << parsed.error().message;
  ASSERT_EQ(parsed->dynamics.size(), 3u);
  EXPECT_EQ(parsed->dynamics[1], (DynamicPortRequest{"b", 2, 1, PortProtocol::kUdp}));
  EXPECT_EQ(parsed->dynamics[2], (DynamicPortRequest{"c", 3, 2, PortProtocol::kTcp}));
}

TEST(PortAnnotationsTest, ForgivesOneTrailingComma) {
  for (const std::string value : {"a=1,", "a=1, ", "a=1 ,\n"}) {
    const auto parsed = parsePorts(value);
    ASSERT_TRUE(parsed.has_value()) << value;
    EXPECT_EQ(parsed->dynamics.size(), 1u);
  }
}

TEST(PortAnnotationsTest, RejectsEmptyEntriesOtherThanOneTrailingComma) {
  EXPECT_THAT(portsError("a=1,,"), HasSubstr("annotation hostport.io/ports: entry 2 is empty"));
  EXPECT_THAT(portsError(",a=1"), HasSubstr("entry 1 is empty"));
  // A lone comma is an empty first entry, not a trailing comma.
  EXPECT_THAT(portsError(","), HasSubstr("entry 1 is empty"));
  EXPECT_THAT(portsError("a=1, ,b=2"), HasSubstr("entry 2 is empty"));
}

TEST(PortAnnotationsTest, ReadsProtocolsCaseInsensitively) {
  const auto parsed = parsePorts("a=1/UDP, b=2/TcpUdp, c=3/sctp, d=4/Tcp");
  ASSERT_TRUE(parsed.has_value()) << parsed.error().message;
  EXPECT_EQ(parsed->dynamics[0].protocol, PortProtocol::kUdp);
  EXPECT_EQ(parsed->dynamics[1].protocol, PortProtocol::kTcpUdp);
  EXPECT_EQ(parsed->dynamics[2].protocol, PortProtocol::kSctp);
  EXPECT_EQ(parsed->dynamics[3].protocol, PortProtocol::kTcp);
}

TEST(PortAnnotationsTest, AcceptsPortAndRangeBoundaries) {
  const auto parsed = parsePorts("a=1, b=65535, c=80-80, d=1000-2023, e=64512-65535");
  ASSERT_TRUE(parsed.has_value()) << parsed.error().message;
  EXPECT_EQ(parsed->dynamics[0].containerPort, 1);
  EXPECT_EQ(parsed->dynamics[1].containerPort, 65535);
  EXPECT_EQ(parsed->dynamics[2].count, 1);
  EXPECT_EQ(parsed->dynamics[3].count, kMaxRangeWidth);
  EXPECT_EQ(parsed->dynamics[4].count, 1024);
}

TEST(PortAnnotationsTest, NamesTheAnnotationAndTokenWhenARangeIsBackwards) {
  EXPECT_EQ(portsError("grpc=19805, rtp=20000-19000/udp"),
            "annotation hostport.io/ports: bad entry \"rtp=20000-19000/udp\": range end 19000 is "
            "below its start 20000");
}

TEST(PortAnnotationsTest, RejectsARangeWiderThanTheLimit) {
  EXPECT_THAT(portsError("wide=1000-2024"),
              HasSubstr("bad entry \"wide=1000-2024\": range 1000-2024 holds 1025 ports, more "
                        "than 1024"));
}

TEST(PortAnnotationsTest, RejectsBadPorts) {
  const std::vector<std::pair<std::string, std::string>> cases = {
      {"a=0", "port \"0\" must be a number 1..65535"},
      {"a=65536", "port \"65536\" must be a number 1..65535"},
      {"a=123456", "port \"123456\""},
      {"a=-1", "port \"\" must be a number"},
      {"a=+80", "port \"+80\""},
      {"a=0x50", "port \"0x50\""},
      {"a=8 0", "port \"8 0\""},
      {"a=80-", "port \"\" must be a number"},
      {"a=80-90-100", "port \"90-100\""},
      {"a=80-0", "port \"0\""},
      {"a=", "missing container port after '='"},
      {"a=/udp", "missing container port after '='"},
      {"a=80/", "missing protocol after '/'"},
      {"a=80/icmp", "unknown protocol \"icmp\" (want tcp, udp, sctp or tcpudp)"},
      {"a=80/udp/tcp", "unknown protocol \"udp/tcp\""},
      {"a=1=2", "port \"1=2\""},
      {"a=\xff\xfe", "port \"\\ufffd\\ufffd\""},  // broken UTF-8 is replaced, never echoed raw
  };
  for (const auto& [value, problem] : cases) {
    const std::string message = portsError(value);
    EXPECT_THAT(message, HasSubstr("annotation hostport.io/ports: bad entry ")) << value;
    EXPECT_THAT(message, HasSubstr(problem)) << value;
  }
}

TEST(PortAnnotationsTest, RejectsBadNames) {
  const std::vector<std::string> bad = {"GRPC=1", "-a=1",    "a-=1",
                                        "a_b=1",  "a.b=1",   "a b=1",
                                        "ünï=1",  "\"a\"=1", std::string(64, 'a') + "=1"};
  for (const std::string& value : bad) {
    EXPECT_THAT(portsError(value), AllOf(HasSubstr("bad entry "), HasSubstr("name "),
                                         HasSubstr("must be lowercase letters, digits and '-'")))
        << value;
  }
  const auto longest = parsePorts(std::string(63, 'a') + "=1, 0-a-9=2");
  ASSERT_TRUE(longest.has_value()) << longest.error().message;
  EXPECT_EQ(longest->dynamics[1].name, "0-a-9");
}

TEST(PortAnnotationsTest, RejectsAnEntryWithoutEqualsOrName) {
  EXPECT_THAT(portsError("grpc"),
              HasSubstr("bad entry \"grpc\": expected name=containerPort[-lastPort][/protocol]"));
  EXPECT_THAT(portsError("19805"), HasSubstr("bad entry \"19805\": expected name="));
  EXPECT_THAT(portsError("=19805"), HasSubstr("bad entry \"=19805\": missing name before '='"));
}

TEST(PortAnnotationsTest, RejectsDuplicateNames) {
  EXPECT_THAT(portsError("grpc=1, web=2, grpc=3/udp"),
              HasSubstr("bad entry \"grpc=3/udp\": name \"grpc\" is used twice"));
}

TEST(PortAnnotationsTest, AcceptsTheMaximumNumberOfEntriesAndNoMore) {
  std::string value;
  for (std::size_t i = 0; i < kMaxPortsPerRequest; ++i) {
    value += (i == 0 ? "p" : ",p") + std::to_string(i) + "=" + std::to_string(i + 1);
  }
  const auto parsed = parsePorts(value);
  ASSERT_TRUE(parsed.has_value()) << parsed.error().message;
  EXPECT_EQ(parsed->dynamics.size(), kMaxPortsPerRequest);
  EXPECT_THAT(portsError(value + ",x=1"), HasSubstr("more than 256 entries"));
}

TEST(PortAnnotationsTest, RejectsAnOversizedValueWithoutEchoingIt) {
  const std::string message = portsError(std::string(1024 * 1024, 'a'));
  EXPECT_EQ(message, "annotation hostport.io/ports: 1048576 bytes exceed the limit of 4096");
  EXPECT_THAT(portsError("a=1," + std::string(4093, ' ')), HasSubstr("4097 bytes exceed"));
}

TEST(PortAnnotationsTest, EscapesAndCutsHostileTokens) {
  const std::string newline = portsError("a=1\nmalicious log line");
  EXPECT_THAT(newline, HasSubstr("bad entry \"a=1\\nmalicious log line\""));
  EXPECT_THAT(newline, Not(HasSubstr("\n")));

  const std::string quote = portsError("a=\"1\"");
  EXPECT_THAT(quote, HasSubstr("bad entry \"a=\\\"1\\\"\""));

  const std::string control = portsError(std::string("a=1\x1b[31m\x7f"));
  EXPECT_THAT(control, HasSubstr("\\u001b[31m\\u007f"));
  EXPECT_THAT(control, Not(HasSubstr("\x1b")));
  EXPECT_THAT(control, Not(HasSubstr("\x7f")));

  const std::string unicode = portsError("пОрт=1");
  EXPECT_TRUE(std::ranges::all_of(unicode, [](char c) { return c >= ' ' && c < '\x7f'; }))
      << unicode;
  EXPECT_THAT(unicode, HasSubstr("\\u043f"));

  const std::string longToken = portsError("a=" + std::string(3000, '9'));
  EXPECT_THAT(longToken, HasSubstr("\"a=" + std::string(62, '9') + "\"..."));
  EXPECT_LT(longToken.size(), 300u);
}

TEST(PortAnnotationsTest, RejectsNonStringValuesNamingTheKey) {
  for (const json& value : {json(19805), json(true), json::array({"a=1"}), json{{"a", 1}}}) {
    EXPECT_THAT(errorOf(parsePortAnnotations(json{{"hostport.io/ports", value}})),
                AllOf(HasSubstr("annotation hostport.io/ports: "), HasSubstr("must be a string")))
        << value.dump();
    EXPECT_THAT(errorOf(parsePortAnnotations(json{{"hostport.io/pool", value}})),
                HasSubstr("annotation hostport.io/pool: "))
        << value.dump();
  }
  EXPECT_EQ(errorOf(parsePortAnnotations(json{{"hostport.io/ports", 5}})),
            "annotation hostport.io/ports: 5 must be a string");
}

TEST(PortAnnotationsTest, ValidatesThePoolName) {
  const auto ok = parsePortAnnotations(json{{"hostport.io/pool", "game-servers-2"}});
  ASSERT_TRUE(ok.has_value());
  EXPECT_EQ(ok->pool, "game-servers-2");
  for (const std::string bad : {"", "Fast", "fast ", "-fast", "fast-", "a/b", "a\nb"}) {
    EXPECT_THAT(
        errorOf(parsePortAnnotations(json{{"hostport.io/pool", bad}})),
        AllOf(HasSubstr("annotation hostport.io/pool: \""), HasSubstr("must be lowercase letters")))
        << bad;
  }
  EXPECT_TRUE(parsePortAnnotations(json{{"hostport.io/pool", std::string(63, 'p')}}).has_value());
  EXPECT_FALSE(parsePortAnnotations(json{{"hostport.io/pool", std::string(64, 'p')}}).has_value());
}

TEST(PortAnnotationsTest, RejectsAnnotationsThatAreNotAnObject) {
  EXPECT_THAT(errorOf(parsePortAnnotations(json::array())),
              HasSubstr("pod annotations: [...] must be a JSON object"));
  EXPECT_THAT(errorOf(parsePortAnnotations(json("x"))), HasSubstr("must be a JSON object"));
}

TEST(PortAnnotationsTest, ReadsTheStickyOptOutExactly) {
  EXPECT_TRUE(parsePortAnnotations(json::object()).value().sticky);
  EXPECT_TRUE(parsePortAnnotations(json{{"hostport.io/sticky", "true"}}).value().sticky);
  EXPECT_FALSE(parsePortAnnotations(json{{"hostport.io/sticky", "false"}}).value().sticky);
  for (const char* bad : {"no", "False", "0", ""}) {
    EXPECT_THAT(errorOf(parsePortAnnotations(json{{"hostport.io/sticky", bad}})),
                HasSubstr("annotation hostport.io/sticky: "))
        << bad;
  }
  EXPECT_FALSE(parsePortAnnotations(json{{"hostport.io/sticky", false}}).has_value());
}

Result<PortAnnotations> parseHostPorts(const std::string& value) {
  return parsePortAnnotations(json{{"hostport.io/ports", value}}, PodNetwork::kHost);
}

TEST(PortAnnotationsTest, AHostNetworkPodNamesPortsAndBlocksWithoutAContainerPort) {
  const auto parsed = parseHostPorts("game/udp, rtp*10/udp, admin, both*2/tcpudp");
  ASSERT_TRUE(parsed.has_value()) << parsed.error().message;
  const std::vector<DynamicPortRequest> expected = {
      {"game", 0, 1, PortProtocol::kUdp},
      {"rtp", 0, 10, PortProtocol::kUdp},
      {"admin", 0, 1, PortProtocol::kTcp},
      {"both", 0, 2, PortProtocol::kTcpUdp},
  };
  EXPECT_EQ(parsed->dynamics, expected);
}

TEST(PortAnnotationsTest, EachPodIsToldTheFormOfTheOther) {
  EXPECT_THAT(errorOf(parseHostPorts("game=7777/udp")),
              HasSubstr("bad entry \"game=7777/udp\": a hostNetwork pod names no containerPort "
                        "(its process binds the host port itself): write \"game/udp\", or "
                        "\"game*N/udp\" for a block of N ports"));
  EXPECT_THAT(
      portsError("game/udp"),
      HasSubstr("bad entry \"game/udp\": expected name=containerPort[-lastPort][/protocol] "
                "(name[*count][/protocol], with no containerPort, is for hostNetwork pods)"));
  EXPECT_THAT(errorOf(parseHostPorts("rtp*0/udp")),
              HasSubstr("block size \"0\" must be a number 1..1024"));
  EXPECT_THAT(errorOf(parseHostPorts("rtp*2000")), HasSubstr("block size \"2000\""));
  EXPECT_THAT(errorOf(parseHostPorts("Game/udp")), HasSubstr("name \"Game\""));
  EXPECT_THAT(errorOf(parseHostPorts("game/quic")), HasSubstr("unknown protocol \"quic\""));
  EXPECT_THAT(errorOf(parseHostPorts("game, game/udp")), HasSubstr("is used twice"));
}

}  // namespace
}  // namespace hostport::annotations
