#include "agent/api/json_codec.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "tests/support/refused_pod_addresses.h"
#include "tests/support/sanitized.h"

namespace hostport::agent::api {
namespace {

using nlohmann::json;
using ::testing::HasSubstr;
using ::testing::Not;

IpAddress ip(std::string_view text) { return IpAddress::parse(text).value(); }

AllocationRequest sampleRequest() {
  AllocationRequest request;
  request.key = {"0123456789abcdef", "eth0"};
  request.pod = {"games", "server-0", "6f1c1b52-8a35-4c2e-9d0e-2f6a7d9e1c11"};
  request.netns = "/var/run/netns/cni-1234";
  request.pool = "fast";
  request.statics = {{8080, 80, PortProtocol::kTcp, std::nullopt},
                     {5353, 53, PortProtocol::kUdp, ip("192.0.2.7")},
                     {9000, 9000, PortProtocol::kSctp, ip("2001:db8::1")}};
  request.dynamics = {{"grpc", 19805, 1, PortProtocol::kTcp},
                      {"rtp", 20000, 10, PortProtocol::kUdp},
                      {"game", 7000, 1, PortProtocol::kTcpUdp}};
  return request;
}

Lease sampleLease() {
  Lease lease;
  lease.key = {"0123456789abcdef", "net1"};
  lease.pod = {"games", "server-0", "uid-1"};
  lease.netns = "/proc/1234/ns/net";
  lease.pool = "default";
  lease.ports = {{"", PortProtocol::kTcp, 8080, 80, 1, ip("10.0.0.1"), true},
                 {"rtp", PortProtocol::kUdp, 30010, 20000, 10, std::nullopt, false}};
  return lease;
}

/// Through text and back, as on the socket.
json wire(const json& value) { return parseBody(dumpBody(value)).value(); }

template <typename T>
std::string errorOf(const Result<T>& result) {
  EXPECT_FALSE(result.has_value());
  if (result.has_value()) return {};
  EXPECT_EQ(result.error().code, ErrorCode::kInvalidArgument);
  return result.error().message;
}

TEST(JsonCodecTest, RoundTripsAnAllocationRequest) {
  const AllocationRequest request = sampleRequest();
  const auto decoded = allocationRequestFromJson(wire(toJson(request)));
  ASSERT_TRUE(decoded.has_value()) << decoded.error().message;
  EXPECT_EQ(decoded->key, request.key);
  EXPECT_EQ(decoded->pod, request.pod);
  EXPECT_EQ(decoded->netns, request.netns);
  EXPECT_EQ(decoded->pool, request.pool);
  EXPECT_EQ(decoded->statics, request.statics);
  EXPECT_EQ(decoded->dynamics, request.dynamics);
}

TEST(JsonCodecTest, WritesTheDocumentedFieldNames) {
  EXPECT_EQ(toJson(sampleLease()), json::parse(R"({
    "containerId": "0123456789abcdef", "ifname": "net1",
    "pod": {"namespace": "games", "name": "server-0", "uid": "uid-1"},
    "netns": "/proc/1234/ns/net", "pool": "default",
    "ports": [
      {"name": "", "protocol": "tcp", "hostPort": 8080, "containerPort": 80, "count": 1,
       "hostIP": "10.0.0.1", "static": true},
      {"name": "rtp", "protocol": "udp", "hostPort": 30010, "containerPort": 20000, "count": 10,
       "static": false}]})"));
  const json request = toJson(sampleRequest());
  EXPECT_EQ(request["static"][1],
            json::parse(R"({"hostPort": 5353, "containerPort": 53, "protocol": "udp",
                            "hostIP": "192.0.2.7"})"));
  EXPECT_EQ(request["dynamic"][2],
            json::parse(R"({"name": "game", "containerPort": 7000, "count": 1,
                            "protocol": "tcpudp"})"));
}

TEST(JsonCodecTest, AHostNetworkPodsGrantHasNoContainerPortAndRoundTrips) {
  Lease lease = sampleLease();
  lease.ports = {PortGrant{"game", PortProtocol::kUdp, 41000, 0, 1, {}, false}};
  const json body = toJson(lease);
  EXPECT_EQ(body["ports"][0], json::parse(R"({"name": "game", "protocol": "udp",
                                              "hostPort": 41000, "count": 1, "static": false})"));
  const auto decoded = leaseFromJson(wire(body));
  ASSERT_TRUE(decoded.has_value()) << decoded.error().message;
  EXPECT_EQ(decoded->ports, lease.ports);
  // A lease that forwards must say where to.
  lease.forwarding = Forwarding{.network = "net", .podV4 = IpPrefix{ip("10.88.0.5"), 16}};
  const auto refused = leaseFromJson(wire(toJson(lease)));
  ASSERT_FALSE(refused.has_value());
  EXPECT_EQ(refused.error().message, "ports[0].containerPort: missing");
}

Forwarding sampleForwarding() {
  return Forwarding{.network = "k8s-pod-network",
                    .podV4 = IpPrefix{ip("10.88.0.5"), 16},
                    .podV6 = IpPrefix{ip("fd00::5"), 64},
                    .snat = false,
                    .masqAll = true,
                    .conditionsV4 = "ip saddr 10.0.0.0/8",
                    .conditionsV6 = ""};
}

TEST(JsonCodecTest, RoundTripsTheForwardingOfARequestAndALease) {
  AllocationRequest request = sampleRequest();
  request.forwarding = sampleForwarding();
  const auto decodedRequest = allocationRequestFromJson(wire(toJson(request)));
  ASSERT_TRUE(decodedRequest.has_value()) << decodedRequest.error().message;
  EXPECT_EQ(decodedRequest->forwarding, request.forwarding);
  EXPECT_EQ(toJson(request)["forwarding"], json::parse(R"({
    "network": "k8s-pod-network", "podIPs": ["10.88.0.5/16", "fd00::5/64"], "snat": false,
    "masqAll": true, "conditionsV4": "ip saddr 10.0.0.0/8"})"));

  Lease lease = sampleLease();
  lease.forwarding = sampleForwarding();
  const auto decodedLease = leaseFromJson(wire(toJson(lease)));
  ASSERT_TRUE(decodedLease.has_value()) << decodedLease.error().message;
  EXPECT_EQ(*decodedLease, lease);
}

TEST(JsonCodecTest, DefaultsAMinimalForwarding) {
  const auto decoded = allocationRequestFromJson(
      json::parse(R"({"containerId": "c1", "ifname": "eth0", "forwarding": {}})"));
  ASSERT_TRUE(decoded.has_value()) << decoded.error().message;
  EXPECT_EQ(decoded->forwarding, Forwarding{});
  EXPECT_TRUE(decoded->forwarding->snat);
}

TEST(JsonCodecTest, NamesTheFieldOfEveryForwardingError) {
  const auto errorOfForwarding = [](const char* forwarding) {
    return errorOf(allocationRequestFromJson(
        json::parse(std::string(R"({"containerId": "c1", "ifname": "eth0", "forwarding": )") +
                    forwarding + "}")));
  };
  EXPECT_EQ(errorOfForwarding("[]"), "forwarding: [...] must be a JSON object");
  EXPECT_EQ(errorOfForwarding(R"({"network": "-x"})"),
            "forwarding.network: \"-x\" must be 1-253 characters of [A-Za-z0-9_.-], starting "
            "alphanumeric");
  EXPECT_EQ(errorOfForwarding(R"({"podIPs": ["10.0.0.1"]})"),
            "forwarding.podIPs[0]: \"10.0.0.1\" must be an address with its prefix, like "
            "10.88.0.5/16");
  EXPECT_EQ(errorOfForwarding(R"({"podIPs": ["10.0.0.1/8", "10.0.0.2/8"]})"),
            "forwarding.podIPs[1]: \"10.0.0.2/8\" is a second address of its family");
  EXPECT_THAT(errorOfForwarding(R"({"podIPs": ["a/1", "b/2", "c/3"]})"),
              HasSubstr("forwarding.podIPs"));
  EXPECT_THAT(errorOfForwarding(R"({"snat": "yes"})"), HasSubstr("forwarding.snat"));
  EXPECT_THAT(errorOfForwarding(R"({"masqAll": 1})"), HasSubstr("forwarding.masqAll"));
  EXPECT_THAT(errorOfForwarding(R"({"conditionsV4": 7})"), HasSubstr("forwarding.conditionsV4"));
}

// The agent trusts no plugin with its DNAT targets: the same policy as the plugin's
// (common/pod_address.h), named by the request's own field. A lease's forwarding is read as
// recorded, so whatever a journal holds can still be listed and released.
TEST(JsonCodecTest, RefusesARequestToForwardToAnAddressNoPodHas) {
  for (const auto& [address, says] : test::refusedPodAddresses()) {
    AllocationRequest request = sampleRequest();
    json body = toJson(request);
    body["forwarding"] = {{"network", "net"}, {"podIPs", {"fd00:88::5/64", address}}};
    if (address.find(':') != std::string::npos) body["forwarding"]["podIPs"][0] = "10.88.0.5/24";
    const std::string error = errorOf(allocationRequestFromJson(body));
    EXPECT_THAT(error, HasSubstr("forwarding.podIPs[1]: \"" + address + "\" ")) << address;
    EXPECT_THAT(error, HasSubstr(says)) << address;

    Lease lease = sampleLease();
    json recorded = toJson(lease);
    recorded["forwarding"] = body["forwarding"];
    EXPECT_TRUE(leaseFromJson(recorded).has_value()) << address;
  }
}

TEST(JsonCodecTest, RefusesARequestForPortsWithoutAPodAddress) {
  json body = toJson(sampleRequest());
  body["forwarding"] = {{"network", "net"}, {"podIPs", json::array()}};
  EXPECT_EQ(errorOf(allocationRequestFromJson(body)),
            "forwarding.podIPs: names no pod address, but the request asks for 6 port row(s): "
            "they would be forwarded nowhere");
  body["forwarding"].erase("podIPs");
  body["static"] = json::array();
  EXPECT_THAT(errorOf(allocationRequestFromJson(body)), HasSubstr("3 port row(s)"));

  body["dynamic"] = json::array();
  EXPECT_TRUE(allocationRequestFromJson(body).has_value()) << "no ports, nothing to forward";
  body = toJson(sampleRequest());
  EXPECT_TRUE(allocationRequestFromJson(body).has_value())
      << "no forwarding: a lease that forwards nothing";
}

TEST(JsonCodecTest, RoundTripsALease) {
  const auto decoded = leaseFromJson(wire(toJson(sampleLease())));
  ASSERT_TRUE(decoded.has_value()) << decoded.error().message;
  EXPECT_EQ(*decoded, sampleLease());
}

TEST(JsonCodecTest, RoundTripsPoolRulesAndNamespaceUsage) {
  PoolUsageRow row{"games", 100, 12, 88, "lowest", {{40000, 40099}}};
  row.namespaces = {"games-*", "media"};
  row.maxPortsPerNamespace = 50;
  row.maxPortsPerPod = 4;
  row.namespaceUsage = {{"", 2}, {"games-a", 10}};
  const auto body = toJson(row);
  EXPECT_EQ(body["rules"]["namespaces"], nlohmann::json::array({"games-*", "media"}));
  EXPECT_EQ(body["namespaceUsage"][1], nlohmann::json({{"namespace", "games-a"}, {"used", 10}}));
  EXPECT_EQ(poolUsageRowFromJson(wire(body)).value(), row);
  // A pool without rules has no "rules"; its usage is always there.
  const PoolUsageRow plain{"default", 10, 1, 9, "lowest", {{1, 10}}};
  auto withoutUsage = toJson(plain);
  EXPECT_FALSE(withoutUsage.contains("rules"));
  EXPECT_EQ(poolUsageRowFromJson(wire(withoutUsage)).value(), plain);
  withoutUsage.erase("namespaceUsage");
  EXPECT_FALSE(poolUsageRowFromJson(wire(withoutUsage)).has_value());
  auto zero = body;
  zero["rules"]["maxPortsPerPod"] = 0;
  EXPECT_FALSE(poolUsageRowFromJson(wire(zero)).has_value());
}

TEST(JsonCodecTest, CarriesAnOptOutOfStickyPortsOnlyWhenSet) {
  AllocationRequest request;
  request.key = {"c0ffee", "eth0"};
  EXPECT_FALSE(toJson(request).contains("sticky"));  // absent: sticky, the default
  request.sticky = false;
  EXPECT_EQ(toJson(request)["sticky"], false);
  const auto decoded = allocationRequestFromJson(wire(toJson(request)));
  ASSERT_TRUE(decoded.has_value()) << decoded.error().message;
  EXPECT_FALSE(decoded->sticky);
}

TEST(JsonCodecTest, RoundTripsKeysPodsAndPoolRows) {
  const AttachmentKey key{"abc", "eth0"};
  EXPECT_EQ(attachmentKeyFromJson(wire(toJson(key))).value(), key);
  const PodIdentity pod{"ns", "web-0.x", "u-1"};
  EXPECT_EQ(podIdentityFromJson(wire(toJson(pod))).value(), pod);
  const PoolUsageRow row{"default", 2768, 10, 2758, "round-robin", {{30000, 32767}, {8080, 8080}}};
  EXPECT_EQ(poolUsageRowFromJson(wire(toJson(row))).value(), row);
  EXPECT_EQ(toJson(row)["ranges"], json::parse(R"(["30000-32767", "8080"])"));
}

TEST(JsonCodecTest, RoundTripsEndpointBodies) {
  const std::vector<AttachmentKey> keys = {{"a", "eth0"}, {"b", "net1"}};
  EXPECT_EQ(gcRequestFromJson(wire(gcRequestBody({"kube", keys}))).value().valid, keys);
  EXPECT_EQ(gcRequestFromJson(wire(gcRequestBody({"kube", {}}))).value().valid,
            std::vector<AttachmentKey>{});
  EXPECT_EQ(gcRequestFromJson(wire(gcRequestBody({"cbr0.net_1", keys}))).value(),
            (GcRequest{"cbr0.net_1", keys}));
  EXPECT_EQ(
      gcRequestBody({"kube", {{"a", "eth0"}}}),
      json::parse(R"({"network": "kube", "valid": [{"containerId": "a", "ifname": "eth0"}]})"));

  const std::vector<Lease> leases = {sampleLease(), sampleLease()};
  EXPECT_EQ(leaseListFromJson(wire(leaseListBody("leases", leases)), "leases").value(), leases);
  EXPECT_EQ(leaseListFromJson(wire(leaseListBody("released", {})), "released").value(),
            std::vector<Lease>{});

  EXPECT_EQ(releasedFromJson(wire(releasedBody(sampleLease()))).value(), sampleLease());
  EXPECT_EQ(releasedBody(std::nullopt), json::parse(R"({"released": null})"));
  EXPECT_EQ(releasedFromJson(wire(releasedBody(std::nullopt))).value(), std::nullopt);

  const std::vector<PoolUsageRow> rows = {{"default", 10, 1, 9, "lowest", {{1, 10}}}};
  EXPECT_EQ(poolsFromJson(wire(poolsBody(rows))).value(), rows);
}

TEST(JsonCodecTest, AppliesDefaultsToAMinimalRequest) {
  const auto decoded = allocationRequestFromJson(json::parse(
      R"({"containerId": "c1", "ifname": "eth0", "pod": null,
          "dynamic": [{"name": "web", "containerPort": 80}],
          "static": [{"hostPort": 81, "containerPort": 80, "hostIP": ""},
                     {"hostPort": 82, "containerPort": 80, "hostIP": "0.0.0.0"},
                     {"hostPort": 83, "containerPort": 80, "hostIP": "::"}],
          "somethingNewer": {"ignored": true}})"));
  ASSERT_TRUE(decoded.has_value()) << decoded.error().message;
  EXPECT_TRUE(decoded->pod.empty());
  EXPECT_EQ(decoded->netns, "");
  EXPECT_EQ(decoded->pool, "");
  EXPECT_EQ(decoded->dynamics[0], (DynamicPortRequest{"web", 80, 1, PortProtocol::kTcp}));
  for (const StaticPortClaim& claim : decoded->statics) {
    EXPECT_EQ(claim.protocol, PortProtocol::kTcp);
    EXPECT_EQ(claim.hostIp, std::nullopt) << "unspecified addresses mean any";
  }
}

TEST(JsonCodecTest, ReadsProtocolsCaseInsensitively) {
  const auto decoded = leaseFromJson(json::parse(
      R"({"containerId": "c", "ifname": "e",
          "ports": [{"hostPort": 1, "containerPort": 1, "protocol": "TCPUDP"}]})"));
  ASSERT_TRUE(decoded.has_value()) << decoded.error().message;
  EXPECT_EQ(decoded->ports[0].protocol, PortProtocol::kTcpUdp);
  EXPECT_FALSE(decoded->ports[0].isStatic);
}

/// A valid request with one change applied at a JSON pointer (or the key removed when `value`
/// is discarded); returns the decode error.
std::string requestError(const std::string& pointer, const json& value) {
  json body = toJson(sampleRequest());
  const json::json_pointer at(pointer);
  if (value.is_discarded()) {
    body[at.parent_pointer()].erase(at.back());
  } else {
    body[at] = value;
  }
  return errorOf(allocationRequestFromJson(body));
}

const json kRemove = json(json::value_t::discarded);

TEST(JsonCodecTest, NamesTheFieldOfEveryRequestError) {
  const std::vector<std::tuple<std::string, json, std::string>> cases = {
      {"/containerId", kRemove, "containerId: missing"},
      {"/containerId", nullptr, "containerId: missing"},
      {"/containerId", 5, "containerId: 5 must be a string"},
      {"/containerId", "", "containerId: \"\" must be 1-100 characters"},
      {"/containerId", "a/b", "containerId: \"a/b\" must be 1-100"},
      {"/containerId", "-abc", "containerId: \"-abc\" must be"},
      {"/containerId", std::string(101, 'a'), "containerId: \"aaaa"},
      {"/ifname", kRemove, "ifname: missing"},
      {"/ifname", "", "ifname: \"\" must not be empty"},
      {"/ifname", "eth0/x", "ifname: \"eth0/x\" must not contain '/'"},
      {"/ifname", "..", "ifname: \"..\" is not a valid name"},
      {"/ifname", "sixteen-chars-xx", "ifname: \"sixteen-chars-xx\" is longer than 15 characters"},
      {"/ifname", "a b", "ifname: \"a b\""},
      {"/pod", "games", "pod: \"games\" must be a JSON object"},
      {"/pod/namespace", "Games", "pod.namespace: \"Games\" must be lowercase"},
      {"/pod/namespace", 1, "pod.namespace: 1 must be a string"},
      {"/pod/name", "web..0", "pod.name: \"web..0\" must be a DNS subdomain"},
      {"/pod/name", std::string(254, 'a'), "pod.name: "},
      {"/pod/uid", "x y", "pod.uid: \"x y\" must be 1-128 characters"},
      {"/netns", "run/netns/x", "netns: \"run/netns/x\" must be an absolute path"},
      {"/netns", "/run/netns/x\ny", "netns: \"/run/netns/x\\ny\" must be an absolute path"},
      {"/netns", json::array(), "netns: [...] must be a string"},
      {"/pool", "Fast", "pool: \"Fast\" must be lowercase"},
      {"/static", json::object(), "static: {...} must be an array"},
      {"/static/0", "8080:80", "static[0]: \"8080:80\" must be a JSON object"},
      {"/static/0/hostPort", kRemove, "static[0].hostPort: missing"},
      {"/static/0/hostPort", 0, "static[0].hostPort: 0 must be an integer 1..65535"},
      {"/static/0/hostPort", 65536, "static[0].hostPort: 65536 must be an integer 1..65535"},
      {"/static/0/hostPort", -1, "static[0].hostPort: -1 must be an integer"},
      {"/static/0/hostPort", "80", "static[0].hostPort: \"80\" must be an integer"},
      {"/static/0/hostPort", 80.5, "static[0].hostPort: 80.5 must be an integer"},
      {"/static/0/hostPort", true, "static[0].hostPort: true must be an integer"},
      {"/static/1/containerPort", 1e20, "static[1].containerPort: 1e+20 must be an integer"},
      {"/static/1/protocol", "icmp", "static[1].protocol: \"icmp\" is not tcp, udp, sctp or"},
      {"/static/1/protocol", 6, "static[1].protocol: 6 must be a string"},
      {"/static/1/hostIP", "nope", "static[1].hostIP: \"nope\" is not an IP address"},
      {"/static/1/hostIP", 7, "static[1].hostIP: 7 must be a string"},
      {"/dynamic", "grpc=1", "dynamic: \"grpc=1\" must be an array"},
      {"/dynamic/0/name", kRemove, "dynamic[0].name: missing"},
      {"/dynamic/0/name", "", "dynamic[0].name: \"\" must be lowercase"},
      {"/dynamic/0/name", "GRPC", "dynamic[0].name: \"GRPC\" must be lowercase"},
      {"/dynamic/1/name", "grpc", "dynamic[1].name: \"grpc\" is used twice"},
      {"/dynamic/0/containerPort", kRemove, "dynamic[0].containerPort: missing"},
      {"/dynamic/1/count", 0, "dynamic[1].count: 0 must be an integer 1..1024"},
      {"/dynamic/1/count", 1025, "dynamic[1].count: 1025 must be an integer 1..1024"},
      {"/dynamic/1/containerPort", 65535,
       "dynamic[1]: containerPort 65535 with count 10 runs past 65535"},
  };
  for (const auto& [pointer, value, expected] : cases) {
    EXPECT_THAT(requestError(pointer, value), HasSubstr(expected)) << pointer;
  }
}

TEST(JsonCodecTest, RejectsARangeThatRunsPastTheLastPort) {
  json body = toJson(sampleRequest());
  body["dynamic"][0]["containerPort"] = 65530;
  body["dynamic"][0]["count"] = 7;
  EXPECT_EQ(errorOf(allocationRequestFromJson(body)),
            "dynamic[0]: containerPort 65530 with count 7 runs past 65535");
  body["dynamic"][0]["count"] = 6;
  EXPECT_TRUE(allocationRequestFromJson(body).has_value());
}

TEST(JsonCodecTest, BoundsTheNumberOfRows) {
  json body = toJson(sampleRequest());
  body["dynamic"] = json::array();
  body["static"] = json::array();
  for (std::size_t i = 0; i < kMaxPortsPerRequest; ++i) {
    body["static"].push_back({{"hostPort", i + 1}, {"containerPort", 80}});
  }
  EXPECT_TRUE(allocationRequestFromJson(body).has_value());
  body["dynamic"].push_back({{"name", "one"}, {"containerPort", 80}});
  EXPECT_EQ(errorOf(allocationRequestFromJson(body)),
            "static and dynamic: 257 rows exceed the limit of 256");
  body["static"].push_back({{"hostPort", 9999}, {"containerPort", 80}});
  EXPECT_EQ(errorOf(allocationRequestFromJson(body)),
            "static: 257 entries exceed the limit of 256");
}

TEST(JsonCodecTest, RejectsABodyThatIsNotAnObject) {
  EXPECT_EQ(errorOf(allocationRequestFromJson(json::array())), "body: [...] must be a JSON object");
  EXPECT_EQ(errorOf(leaseFromJson(json("x"))), "body: \"x\" must be a JSON object");
  EXPECT_EQ(errorOf(gcRequestFromJson(json(nullptr))), "body: null must be a JSON object");
}

TEST(JsonCodecTest, NamesTheFieldOfEveryLeaseError) {
  const std::vector<std::tuple<std::string, json, std::string>> cases = {
      {"/ports", json::object(), "ports: {...} must be an array"},
      {"/ports/0/static", "yes", "ports[0].static: \"yes\" must be true or false"},
      {"/ports/0/name", "A", "ports[0].name: \"A\" must be lowercase"},
      {"/ports/1/hostPort", 65530, "ports[1]: hostPort 65530 with count 10 runs past 65535"},
      {"/ports/1/containerPort", 65530, "ports[1]: containerPort 65530 with count 10 runs past"},
      {"/ports/1/hostPort", kRemove, "ports[1].hostPort: missing"},
      {"/ports/1/count", "10", "ports[1].count: \"10\" must be an integer 1..1024"},
      {"/ports/0/hostIP", "10.0.0.300", "ports[0].hostIP: \"10.0.0.300\" is not an IP"},
  };
  for (const auto& [pointer, value, expected] : cases) {
    json body = toJson(sampleLease());
    const json::json_pointer at(pointer);
    if (value.is_discarded()) {
      body[at.parent_pointer()].erase(at.back());
    } else {
      body[at] = value;
    }
    EXPECT_THAT(errorOf(leaseFromJson(body)), HasSubstr(expected)) << pointer;
  }
  json tooMany = toJson(sampleLease());
  tooMany["ports"] = json::array();
  for (int i = 0; i < 257; ++i) tooMany["ports"].push_back(toJson(sampleLease().ports[0]));
  EXPECT_EQ(errorOf(leaseFromJson(tooMany)), "ports: 257 entries exceed the limit of 256");
}

TEST(JsonCodecTest, NamesTheFieldOfEveryBodyError) {
  EXPECT_EQ(errorOf(gcRequestFromJson(json::object())), "valid: missing");
  EXPECT_EQ(errorOf(gcRequestFromJson(json::parse(R"({"valid": [{"containerId": "a",
                                                    "ifname": "eth0"}, {"containerId": "b"}]})"))),
            "valid[1].ifname: missing");
  json many = {{"valid", json::array()}};
  for (std::size_t i = 0; i <= kMaxGcKeys; ++i) {
    many["valid"].push_back({{"containerId", "a"}, {"ifname", "e"}});
  }
  EXPECT_EQ(errorOf(gcRequestFromJson(many)), "valid: 65537 entries exceed the limit of 65536");
  // A GC names its network: without one it would reach every network's leases.
  EXPECT_EQ(errorOf(gcRequestFromJson(json::parse(R"({"valid": []})"))), "network: missing");
  EXPECT_EQ(errorOf(gcRequestFromJson(json::parse(R"({"valid": [], "network": null})"))),
            "network: missing");
  EXPECT_THAT(errorOf(gcRequestFromJson(json::parse(R"({"valid": [], "network": ""})"))),
              HasSubstr("network: \"\" "));
  EXPECT_THAT(errorOf(gcRequestFromJson(json::parse(R"({"valid": [], "network": "a/b"})"))),
              HasSubstr("network: \"a/b\" "));
  EXPECT_EQ(errorOf(gcRequestFromJson(json::parse(R"({"valid": [], "network": 7})"))),
            "network: 7 must be a string");

  EXPECT_EQ(errorOf(leaseListFromJson(json::object(), "leases")), "leases: missing");
  EXPECT_THAT(errorOf(leaseListFromJson(json::parse(R"({"leases": [{"ifname": "e"}]})"), "leases")),
              HasSubstr("leases[0].containerId: missing"));
  EXPECT_EQ(errorOf(releasedFromJson(json::object())), "released: missing");
  EXPECT_EQ(errorOf(releasedFromJson(json::parse(R"({"released": 1})"))),
            "released: 1 must be a JSON object");

  EXPECT_EQ(errorOf(poolsFromJson(json::object())), "pools: missing");
  const std::vector<std::pair<std::string, std::string>> pools = {
      {R"({"pools": [{"size": 1, "used": 0, "free": 1}]})", "pools[0].name: missing"},
      {R"({"pools": [{"name": "d", "size": -1, "used": 0, "free": 1}]})",
       "pools[0].size: -1 must be an integer 0..4294967295"},
      {R"({"pools": [{"name": "d", "size": 1, "used": 0}]})", "pools[0].free: missing"},
      {R"({"pools": [{"name": "d", "size": 1, "used": 0, "free": 1, "ranges": ["9-1"]}]})",
       "pools[0].ranges[0]: \"9-1\" must be a port range like 30000-32767"},
      {R"({"pools": [{"name": "d", "size": 1, "used": 0, "free": 1, "ranges": [5]}]})",
       "pools[0].ranges[0]: 5 must be a string"},
  };
  for (const auto& [body, expected] : pools) {
    EXPECT_EQ(errorOf(poolsFromJson(json::parse(body))), expected) << body;
  }
}

TEST(JsonCodecTest, AGcOfTheMostKeysOfTheLongestIdsFitsTheRequestLimit) {
  // The one limit both sides use must hold the largest GC the plugin accepts.
  GcRequest request;
  request.network = std::string(kMaxNetworkNameLength, 'n');
  const std::size_t keys = test::sizedForTheTree(kMaxGcKeys);
  for (std::size_t i = 0; i < keys; ++i) {
    std::string id = std::to_string(i);
    id.insert(0, kMaxContainerIdLength - id.size(), 'c');
    request.valid.push_back({id, "eth0-abcdefghij"});
  }
  ASSERT_EQ(request.valid.back().containerId.size(), kMaxContainerIdLength);
  const std::string body = dumpBody(gcRequestBody(request));
  EXPECT_LE(body.size(), kMaxGcBodyBytes);
  if (keys == kMaxGcKeys) {
    EXPECT_GT(body.size(), kMaxGcBodyBytes - 64) << "the bound is tight, not a guess";
  }
  EXPECT_LE(kMaxGcBodyBytes, kMaxRequestBytes);
  const auto parsed = parseBody(body);
  ASSERT_TRUE(parsed.has_value()) << parsed.error().message;
  const auto decoded = gcRequestFromJson(*parsed);
  ASSERT_TRUE(decoded.has_value()) << decoded.error().message;
  EXPECT_EQ(decoded->valid.size(), keys);
}

TEST(JsonCodecTest, EchoesHostileValuesQuotedAndCut) {
  const std::string message =
      requestError("/containerId", std::string("x\"\n\x1b") + std::string(1024 * 1024, 'a'));
  EXPECT_THAT(message,
              HasSubstr("containerId: \"x\\\"\\n\\u001b" + std::string(60, 'a') + "\"..."));
  EXPECT_THAT(message, Not(HasSubstr("\n")));
  EXPECT_LT(message.size(), 200u);
  const std::string unicode = requestError("/pool", "пул");
  EXPECT_THAT(unicode, HasSubstr("pool: \"\\u043f\\u0443\\u043b\""));
}

TEST(JsonCodecTest, ParseBodyRejectsOversizedDeepAndMalformedInput) {
  const auto tooBig = parseBody(std::string(kMaxRequestBytes + 1, ' '));
  ASSERT_FALSE(tooBig.has_value());
  EXPECT_EQ(tooBig.error().code, ErrorCode::kDecode);
  EXPECT_THAT(tooBig.error().message, HasSubstr("exceed the limit of 10485760"));
  EXPECT_TRUE(parseBody("{}", 2).has_value());
  EXPECT_FALSE(parseBody("{} ", 2).has_value());

  const auto deep = parseBody(std::string(10000, '[') + std::string(10000, ']'));
  ASSERT_FALSE(deep.has_value());
  EXPECT_EQ(deep.error().code, ErrorCode::kDecode);
  EXPECT_THAT(deep.error().message, HasSubstr("nested deeper than 32"));

  for (const std::string garbage : {"", "{", "{\"a\":}", "nul", "{\"a\":1}x", "\xff"}) {
    const auto result = parseBody(garbage);
    ASSERT_FALSE(result.has_value()) << garbage;
    EXPECT_EQ(result.error().code, ErrorCode::kDecode);
    EXPECT_EQ(result.error().message, "body: not valid JSON");
  }
}

TEST(JsonCodecTest, DumpBodyNeverThrowsOnBrokenUtf8) {
  const std::string text = dumpBody(json{{"message", std::string("bad \xff utf8")}});
  EXPECT_EQ(text, "{\"message\":\"bad \xef\xbf\xbd utf8\"}");
}

}  // namespace
}  // namespace hostport::agent::api
