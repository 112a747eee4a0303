// The pod socket's contract (agent/api/pod_codec.h): the wait parameter's grammar and bounds, the
// body of GET /v1/self, one port as text, and the targets hostportctl self builds.

#include "agent/api/pod_codec.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

namespace hostport::agent::api {
namespace {

using namespace std::chrono_literals;
using ::testing::HasSubstr;

Lease leaseWith(std::vector<PortGrant> ports, std::string ifname = "eth0") {
  Lease lease;
  lease.key = {"c0ffee", std::move(ifname)};
  lease.pod = {"games", "server-0", "uid-1"};
  lease.netns = "/run/netns/cni-1";
  lease.pool = "default";
  lease.ports = std::move(ports);
  return lease;
}

PortGrant named(std::string name, uint16_t hostPort, uint16_t containerPort, uint16_t count = 1,
                PortProtocol protocol = PortProtocol::kTcp) {
  return {std::move(name), protocol, hostPort, containerPort, count, std::nullopt, false};
}

TEST(PodCodecTest, WaitTakesSecondsMillisecondsOrABareNumberOfSeconds) {
  EXPECT_EQ(parseWait("10s"), 10s);
  EXPECT_EQ(parseWait("1500ms"), 1500ms);
  EXPECT_EQ(parseWait("7"), 7s);
  EXPECT_EQ(parseWait("0"), 0ms);
  EXPECT_EQ(parseWait("60s"), 60s);
}

TEST(PodCodecTest, WaitRefusesValuesOutsideTheGrammarNamingTheParameterAndTheValue) {
  for (const char* bad : {"", "s", "ms", "10m", "1h", "-1s", "1.5s", "10 s", "abc", "0x10", "61s",
                          "60001ms", "9999999s"}) {
    auto wait = parseWait(bad);
    ASSERT_FALSE(wait.has_value()) << bad;
    EXPECT_EQ(wait.error().code, ErrorCode::kInvalidArgument);
    EXPECT_THAT(wait.error().message, HasSubstr("wait: \"" + std::string(bad) + "\""));
    EXPECT_THAT(wait.error().message, HasSubstr("at most 60s"));
  }
}

TEST(PodCodecTest, SelfBodyHoldsThePodAndEveryPortOfItsLeases) {
  PortGrant staticClaim{"",  PortProtocol::kUdp, 8080, 80, 1, IpAddress::parse("10.0.0.1").value(),
                        true};
  const auto body =
      selfBody({leaseWith({named("web", 30000, 80), staticClaim}),
                leaseWith({named("rtp", 20000, 5000, 10, PortProtocol::kUdp)}, "net1")});
  EXPECT_EQ(body["namespace"], "games");
  EXPECT_EQ(body["name"], "server-0");
  ASSERT_EQ(body["ports"].size(), 3u);
  EXPECT_EQ(body["ports"][0]["name"], "web");
  EXPECT_EQ(body["ports"][0]["hostPort"], 30000);
  EXPECT_EQ(body["ports"][0]["containerPort"], 80);
  EXPECT_EQ(body["ports"][0]["protocol"], "tcp");
  EXPECT_EQ(body["ports"][0]["count"], 1);
  EXPECT_EQ(body["ports"][1]["hostIP"], "10.0.0.1");
  EXPECT_EQ(body["ports"][1]["static"], true);
  EXPECT_EQ(body["ports"][2]["count"], 10);
}

TEST(PodCodecTest, SelfBodyTellsNothingButThePodAndItsPorts) {
  const auto body = selfBody({leaseWith({named("web", 30000, 80)})});
  for (const auto& [key, value] : body.items()) {
    EXPECT_TRUE(key == "namespace" || key == "name" || key == "ports") << key;
  }
  EXPECT_EQ(body.dump().find("c0ffee"), std::string::npos) << body.dump();
  EXPECT_EQ(body.dump().find("/run/netns"), std::string::npos) << body.dump();
}

TEST(PodCodecTest, PortTextIsTheNumberOrTheRangeAndANewline) {
  EXPECT_EQ(portText(named("web", 30123, 80)), "30123\n");
  EXPECT_EQ(portText(named("rtp", 20000, 5000, 10)), "20000-20009\n");
}

TEST(PodCodecTest, NamedPortFindsTheFirstPortOfThatName) {
  const std::vector<Lease> leases = {leaseWith({named("web", 30000, 80)}),
                                     leaseWith({named("web", 30001, 80)}, "net1")};
  ASSERT_TRUE(namedPort(leases, "web").has_value());
  EXPECT_EQ(namedPort(leases, "web")->hostPort, 30000);
  EXPECT_FALSE(namedPort(leases, "grpc").has_value());
}

TEST(PodCodecTest, SelfTargetEncodesTheNameAndTheWait) {
  EXPECT_EQ(selfTarget("", std::nullopt), "/v1/self");
  EXPECT_EQ(selfTarget("", 10s), "/v1/self?wait=10s");
  EXPECT_EQ(selfTarget("web", 5s), "/v1/self/ports/web?wait=5s");
  EXPECT_EQ(selfTarget("a b", std::nullopt), "/v1/self/ports/a%20b");
  EXPECT_EQ(selfEnvTarget(std::nullopt), "/v1/self/env");
  EXPECT_EQ(selfEnvTarget(10s), "/v1/self/env?wait=10s");
}

TEST(PodCodecTest, SelfBodyOfAPodWithoutALeaseNamesThePodWithNoPorts) {
  const auto body = selfBody(PodIdentity{"games", "server-0", "uid-1"}, {});
  EXPECT_EQ(body, nlohmann::json::parse(R"({"namespace":"games","name":"server-0","ports":[]})"));
}

TEST(PodCodecTest, EnvNameUpperCasesTheNameWithUnderscores) {
  EXPECT_EQ(envName("web"), "HOSTPORT_WEB");
  EXPECT_EQ(envName("rtp-in-2"), "HOSTPORT_RTP_IN_2");
}

TEST(PodCodecTest, EnvTextHasALinePerNamedPortAndFirstAndLastForARange) {
  PortGrant staticClaim{"", PortProtocol::kTcp, 8080, 80, 1, std::nullopt, true};
  const std::vector<Lease> leases = {
      leaseWith({named("web", 30000, 80), staticClaim,
                 named("rtp-in", 20000, 5000, 10, PortProtocol::kUdp)}),
      leaseWith({named("web", 30001, 80), named("admin", 30002, 9000)}, "net1")};
  EXPECT_EQ(envText(leases),
            "HOSTPORT_WEB=30000\n"
            "HOSTPORT_RTP_IN=20000-20009\n"
            "HOSTPORT_RTP_IN_FIRST=20000\n"
            "HOSTPORT_RTP_IN_LAST=20009\n"
            "HOSTPORT_ADMIN=30002\n");
  EXPECT_EQ(envText({}), "");
  EXPECT_EQ(envText({leaseWith({staticClaim})}), "");
}

}  // namespace
}  // namespace hostport::agent::api
