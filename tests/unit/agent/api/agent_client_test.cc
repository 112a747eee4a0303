#include "agent/api/agent_client.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <filesystem>

#include "agent/api/http_errors.h"
#include "agent/api/json_codec.h"
#include "tests/fakes/fake_agent_server.h"
#include "tests/support/result_assertions.h"
#include "tests/support/temp_dir.h"

namespace hostport::agent::api {
namespace {

using nlohmann::json;
using ::testing::HasSubstr;
using ::testing::StartsWith;
using namespace std::chrono_literals;

Lease sampleLease() {
  Lease lease;
  lease.key = {"abc123", "eth0"};
  lease.pod = {"games", "server-0", "uid-1"};
  lease.netns = "/var/run/netns/cni-1";
  lease.pool = "default";
  lease.ports = {{"grpc", PortProtocol::kTcp, 30000, 19805, 1, std::nullopt, false}};
  return lease;
}

AllocationRequest sampleRequest() {
  AllocationRequest request;
  request.key = {"abc123", "eth0"};
  request.pod = {"games", "server-0", "uid-1"};
  request.netns = "/var/run/netns/cni-1";
  request.dynamics = {{"grpc", 19805, 1, PortProtocol::kTcp}};
  return request;
}

FakeAgentServer::Handler always(std::string answer) {
  return [answer = std::move(answer)](const RecordedRequest&) { return answer; };
}

std::string jsonReply(unsigned status, const json& body) {
  return FakeAgentServer::reply(status, body.dump());
}

TEST(AgentClientTest, AllocatesWithOnePostOfTheRequest) {
  FakeAgentServer server(always(jsonReply(200, toJson(sampleLease()))));
  const auto lease = AgentClient::forSocket(server.path(), 5s).allocate(sampleRequest());
  ASSERT_OK(lease);
  EXPECT_EQ(*lease, sampleLease());

  const auto requests = server.requests();
  ASSERT_EQ(requests.size(), 1u);
  EXPECT_EQ(requests[0].method, "POST");
  EXPECT_EQ(requests[0].target, "/v1/attachments");
  EXPECT_THAT(requests[0].headers, HasSubstr("Content-Type: application/json"));
  const auto sent = allocationRequestFromJson(json::parse(requests[0].body));
  ASSERT_OK(sent);
  EXPECT_EQ(sent->key, sampleRequest().key);
  EXPECT_EQ(sent->dynamics, sampleRequest().dynamics);
}

TEST(AgentClientTest, GetsALeaseOrNothing) {
  FakeAgentServer server([](const RecordedRequest& request) {
    if (request.target == "/v1/attachments/abc123/eth0") {
      return jsonReply(200, toJson(sampleLease()));
    }
    return jsonReply(404, errorBody(Error{ErrorCode::kNotFound, "no lease", ""}));
  });
  const AgentClient client = AgentClient::forSocket(server.path(), 5s);
  const auto found = client.get({"abc123", "eth0"});
  ASSERT_OK(found);
  EXPECT_EQ(*found, sampleLease());
  const auto missing = client.get({"abc123", "net1"});
  ASSERT_OK(missing);
  EXPECT_EQ(*missing, std::nullopt);
  EXPECT_EQ(server.requests()[1].method, "GET");
}

TEST(AgentClientTest, ReleasesByKeyEscapingThePath) {
  FakeAgentServer server([](const RecordedRequest& request) {
    if (request.target == "/v1/attachments/abc123/e%25th0") return jsonReply(200, releasedBody({}));
    return jsonReply(200, releasedBody(sampleLease()));
  });
  const AgentClient client = AgentClient::forSocket(server.path(), 5s);
  const auto nothing = client.release({"abc123", "e%th0"});
  ASSERT_OK(nothing);
  EXPECT_EQ(*nothing, std::nullopt);
  const auto released = client.release({"abc123", "eth0"});
  ASSERT_OK(released);
  EXPECT_EQ(*released, sampleLease());
  EXPECT_EQ(server.requests()[0].method, "DELETE");
}

TEST(AgentClientTest, ListsReleasesContainersAndCollectsGarbage) {
  FakeAgentServer server([](const RecordedRequest& request) {
    const bool listing = request.method == "GET";
    return jsonReply(200, leaseListBody(listing ? "leases" : "released", {sampleLease()}));
  });
  const AgentClient client = AgentClient::forSocket(server.path(), 5s);

  const auto listed = client.list("games", "server-0");
  ASSERT_OK(listed);
  EXPECT_EQ(*listed, std::vector<Lease>{sampleLease()});
  ASSERT_TRUE(client.list("", "").has_value());

  const auto container = client.releaseContainer("abc123");
  ASSERT_OK(container);
  EXPECT_EQ(container->size(), 1u);

  const auto collected = client.gc({"kube", {{"keep", "eth0"}}});
  ASSERT_OK(collected);
  EXPECT_EQ(*collected, std::vector<Lease>{sampleLease()});

  const auto requests = server.requests();
  ASSERT_EQ(requests.size(), 4u);
  EXPECT_EQ(requests[0].target, "/v1/attachments?namespace=games&pod=server-0");
  EXPECT_EQ(requests[1].target, "/v1/attachments");
  EXPECT_EQ(requests[2].method + " " + requests[2].target,
            "DELETE /v1/attachments?containerId=abc123");
  EXPECT_EQ(requests[3].method + " " + requests[3].target, "POST /v1/gc");
  EXPECT_EQ(gcRequestFromJson(json::parse(requests[3].body)).value(),
            (GcRequest{"kube", {{"keep", "eth0"}}}));
}

TEST(AgentClientTest, ReadsPoolsAndTextEndpoints) {
  const std::vector<PoolUsageRow> rows = {{"default", 2768, 1, 2767, "lowest", {{30000, 32767}}}};
  FakeAgentServer server([&](const RecordedRequest& request) {
    if (request.target == "/v1/pools") return jsonReply(200, poolsBody(rows));
    if (request.target == "/readyz")
      return FakeAgentServer::reply(503, "journal replay", "text/plain");
    return FakeAgentServer::reply(200, "# TYPE hostport_leases gauge\nhostport_leases 1\n",
                                  "text/plain");
  });
  const AgentClient client = AgentClient::forSocket(server.path(), 5s);
  const auto document = client.pools();
  ASSERT_OK(document);
  EXPECT_EQ((*document)["pools"][0]["ranges"][0], "30000-32767");
  EXPECT_EQ(client.poolUsage().value(), rows);

  const auto metrics = client.getText("/metrics");
  ASSERT_OK(metrics);
  EXPECT_THAT(*metrics, HasSubstr("hostport_leases 1\n"));

  const auto ready = client.getText("/readyz");
  ASSERT_FALSE(ready.has_value());
  EXPECT_EQ(ready.error().code, ErrorCode::kUnavailable);
  EXPECT_EQ(ready.error().message, "HTTP status 503, body \"journal replay\"");
}

TEST(AgentClientTest, ReadsAChunkedAnswer) {
  const std::string body = toJson(sampleLease()).dump();
  const std::string half = body.substr(0, body.size() / 2);
  const std::string rest = body.substr(half.size());
  const auto hex = [](std::size_t n) {
    char text[16];
    std::snprintf(text, sizeof(text), "%zx", n);
    return std::string(text);
  };
  FakeAgentServer server(always("HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n" +
                                hex(half.size()) + "\r\n" + half + "\r\n" + hex(rest.size()) +
                                "\r\n" + rest + "\r\n0\r\n\r\n"));
  const auto lease = AgentClient::forSocket(server.path(), 5s).get({"abc123", "eth0"});
  ASSERT_OK(lease);
  EXPECT_EQ(*lease, sampleLease());
}

TEST(AgentClientTest, ReadsAnAnswerWhoseBodyEndsWithTheConnection) {
  // No Content-Length and not chunked: the body is everything until the server hangs up.
  const std::string body = toJson(sampleLease()).dump();
  FakeAgentServer server(
      always("HTTP/1.1 200 OK\r\nContent-Type: application/json\r\n\r\n" + body));
  const auto lease = AgentClient::forSocket(server.path(), 5s).get({"abc123", "eth0"});
  ASSERT_OK(lease);
  EXPECT_EQ(*lease, sampleLease());
}

TEST(AgentClientTest, IsUnavailableWhenTheAnswerIsCutShort) {
  const std::string body = toJson(sampleLease()).dump();
  FakeAgentServer server(
      always("HTTP/1.1 200 OK\r\nContent-Length: " + std::to_string(body.size()) + "\r\n\r\n" +
             body.substr(0, body.size() / 2)));
  const auto lease = AgentClient::forSocket(server.path(), 5s).get({"abc123", "eth0"});
  ASSERT_FALSE(lease.has_value());
  EXPECT_EQ(lease.error().code, ErrorCode::kUnavailable);
  EXPECT_THAT(lease.error().message, HasSubstr("connection closed before a complete answer"));
}

TEST(AgentClientTest, ReturnsTheAgentsErrorCodeAndMessage) {
  for (const ErrorCode code :
       {ErrorCode::kInvalidArgument, ErrorCode::kConflict, ErrorCode::kExhausted,
        ErrorCode::kUnavailable, ErrorCode::kIo, ErrorCode::kKernel, ErrorCode::kInternal}) {
    const Error sent{code, "port 8080/tcp is held by nginx (pid 42)", ""};
    FakeAgentServer server(always(jsonReply(httpStatus(code), errorBody(sent))));
    const auto lease = AgentClient::forSocket(server.path(), 5s).allocate(sampleRequest());
    ASSERT_FALSE(lease.has_value());
    EXPECT_EQ(lease.error().code, code) << machineCode(code);
    EXPECT_EQ(lease.error().message, sent.message);
  }
}

TEST(AgentClientTest, MapsAnErrorBodyThatIsNotOursByStatus) {
  FakeAgentServer server(always(FakeAgentServer::reply(409, "<h1>busy</h1>", "text/html")));
  const auto lease = AgentClient::forSocket(server.path(), 5s).allocate(sampleRequest());
  ASSERT_FALSE(lease.has_value());
  EXPECT_EQ(lease.error().code, ErrorCode::kConflict);
  EXPECT_EQ(lease.error().message, "HTTP status 409, body \"<h1>busy</h1>\"");
}

TEST(AgentClientTest, IsUnavailableWhenTheSocketFileIsMissing) {
  const test::TempDir dir;
  const std::string path = (dir / "no-such-dir" / "agent.sock").string();
  const auto lease = AgentClient::forSocket(path, 5s).allocate(sampleRequest());
  ASSERT_FALSE(lease.has_value());
  EXPECT_EQ(lease.error().code, ErrorCode::kUnavailable);
  EXPECT_EQ(lease.error().message,
            "hostport-agent is not reachable at " + path + ": no socket file");
}

TEST(AgentClientTest, IsUnavailableWhenTheConnectionIsRefused) {
  // A bound socket nobody listens on: what a crashed agent leaves behind.
  const test::TempDir dir;
  ASSERT_FALSE(dir.path().empty()) << "no temp dir";
  const std::string path = (dir / "agent.sock").string();
  const int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
  sockaddr_un address{};
  address.sun_family = AF_UNIX;
  path.copy(address.sun_path, sizeof(address.sun_path) - 1);
  ASSERT_EQ(bind(fd, reinterpret_cast<sockaddr*>(&address), sizeof(address)), 0);
  close(fd);

  const auto lease = AgentClient::forSocket(path, 5s).allocate(sampleRequest());
  ASSERT_FALSE(lease.has_value());
  EXPECT_EQ(lease.error().code, ErrorCode::kUnavailable);
  EXPECT_EQ(lease.error().message,
            "hostport-agent is not reachable at " + path + ": connection refused");
}

TEST(AgentClientTest, TimesOutWhenTheAgentNeverAnswers) {
  FakeAgentServer server([](const RecordedRequest&) { return std::nullopt; });
  const auto start = std::chrono::steady_clock::now();
  const auto lease = AgentClient::forSocket(server.path(), 200ms).allocate(sampleRequest());
  const auto elapsed = std::chrono::steady_clock::now() - start;
  ASSERT_FALSE(lease.has_value());
  EXPECT_EQ(lease.error().code, ErrorCode::kUnavailable);
  EXPECT_EQ(lease.error().message, "hostport-agent is not reachable at " + server.path() +
                                       ": no answer within 200 ms (POST /v1/attachments)");
  EXPECT_GE(elapsed, 200ms);
  EXPECT_LT(elapsed, 5s);
  EXPECT_EQ(server.requests().size(), 1u) << "the request was sent before the wait";
}

TEST(AgentClientTest, IsUnavailableWhenTheAgentHangsUpWithoutAnswering) {
  FakeAgentServer server(always(""));
  const auto lease = AgentClient::forSocket(server.path(), 5s).allocate(sampleRequest());
  ASSERT_FALSE(lease.has_value());
  EXPECT_EQ(lease.error().code, ErrorCode::kUnavailable);
  EXPECT_THAT(lease.error().message, StartsWith("hostport-agent is not reachable at "));
  EXPECT_THAT(lease.error().message, HasSubstr("connection closed before a complete answer"));
}

TEST(AgentClientTest, RejectsAnOversizedAnswer) {
  const std::string big(4096, ' ');
  // Announced by Content-Length, sent in chunks, and read until the server closes.
  for (const std::string& answer :
       {FakeAgentServer::reply(200, big + "{}"),
        "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n1000\r\n" + big + "\r\n0\r\n\r\n",
        "HTTP/1.1 200 OK\r\n\r\n" + big}) {
    FakeAgentServer server(always(answer));
    auto client = AgentClient::forSocket(server.path(), 5s);
    client.withMaxResponseBytes(1024);
    const auto lease = client.get({"abc123", "eth0"});
    ASSERT_FALSE(lease.has_value());
    EXPECT_EQ(lease.error().code, ErrorCode::kInternal);
    EXPECT_EQ(lease.error().message,
              "hostport-agent at " + server.path() + " sent an answer larger than 1024 bytes");
  }
}

TEST(AgentClientTest, RefusesToSendABodyOverTheAgentsLimit) {
  FakeAgentServer server(always(jsonReply(200, {{"released", json::array()}})));
  GcRequest request;
  request.network = "net";
  // More keys than the plugin accepts, so more bytes than the agent takes.
  request.valid.assign(kMaxRequestBytes / 20, AttachmentKey{std::string(40, 'c'), "eth0"});
  const auto released = AgentClient::forSocket(server.path(), 5s).gc(request);
  ASSERT_FALSE(released.has_value());
  EXPECT_EQ(released.error().code, ErrorCode::kInvalidArgument);
  EXPECT_THAT(released.error().message,
              HasSubstr("exceeds the control socket's limit of 10485760 bytes"));
  EXPECT_THAT(released.error().message, StartsWith("POST /v1/gc: a body of "));
  EXPECT_TRUE(server.requests().empty());
}

TEST(AgentClientTest, AcceptsAnAnswerAtTheSizeLimit) {
  const std::string body = toJson(sampleLease()).dump();
  FakeAgentServer server(always(FakeAgentServer::reply(200, body)));
  auto client = AgentClient::forSocket(server.path(), 5s);
  client.withMaxResponseBytes(body.size());
  const auto lease = client.get({"abc123", "eth0"});
  ASSERT_OK(lease);
  EXPECT_EQ(**lease, sampleLease());
}

TEST(AgentClientTest, RejectsHeadersThatNeverEnd) {
  FakeAgentServer server(
      always("HTTP/1.1 200 OK\r\nX-Filler: " + std::string(64 * 1024, 'x') + "\r\n\r\n{}"));
  const auto lease = AgentClient::forSocket(server.path(), 5s).get({"abc123", "eth0"});
  ASSERT_FALSE(lease.has_value());
  EXPECT_EQ(lease.error().code, ErrorCode::kInternal);
  EXPECT_THAT(lease.error().message, HasSubstr("sent a malformed HTTP answer"));
}

TEST(AgentClientTest, RejectsGarbageThatIsNotHttp) {
  FakeAgentServer server(always("SSH-2.0-OpenSSH_9.2\r\n\r\n"));
  const auto lease = AgentClient::forSocket(server.path(), 5s).allocate(sampleRequest());
  ASSERT_FALSE(lease.has_value());
  EXPECT_EQ(lease.error().code, ErrorCode::kInternal);
  EXPECT_THAT(lease.error().message,
              StartsWith("hostport-agent at " + server.path() + " sent a malformed HTTP answer: "));
}

TEST(AgentClientTest, RejectsA200ThatIsNotTheExpectedJson) {
  const std::vector<std::pair<std::string, std::string>> cases = {
      {"not json", "body: not valid JSON"},
      {R"({"containerId": "abc123"})", "ifname: missing"},
      {R"({"containerId": "abc123", "ifname": "eth0", "ports": [{"hostPort": 0}]})",
       "ports[0].hostPort: 0 must be an integer 1..65535"},
  };
  for (const auto& [body, problem] : cases) {
    FakeAgentServer server(always(FakeAgentServer::reply(200, body)));
    const auto lease = AgentClient::forSocket(server.path(), 5s).allocate(sampleRequest());
    ASSERT_FALSE(lease.has_value()) << body;
    EXPECT_EQ(lease.error().code, ErrorCode::kInternal);
    EXPECT_EQ(lease.error().message, "hostport-agent at " + server.path() +
                                         " sent an invalid answer to /v1/attachments: " + problem);
  }
}

TEST(AgentClientTest, RejectsAnUnusableSocketPathBeforeConnecting) {
  for (const std::string& path : {std::string(), "/tmp/" + std::string(200, 'x')}) {
    const auto lease = AgentClient::forSocket(path, 5s).allocate(sampleRequest());
    ASSERT_FALSE(lease.has_value());
    EXPECT_EQ(lease.error().code, ErrorCode::kInvalidArgument);
    EXPECT_THAT(lease.error().message, HasSubstr("agent socket path"));
  }
}

TEST(AgentClientTest, RefusesATargetThatWouldSplitTheRequestLine) {
  FakeAgentServer server(always(FakeAgentServer::reply(200, "ok", "text/plain")));
  const AgentClient client = AgentClient::forSocket(server.path(), 5s);
  for (const std::string target : {"/metrics HTTP/1.1\r\nX: y", "metrics", "", "/a b"}) {
    const auto text = client.getText(target);
    ASSERT_FALSE(text.has_value()) << target;
    EXPECT_EQ(text.error().code, ErrorCode::kInvalidArgument);
  }
  EXPECT_TRUE(server.requests().empty());
  EXPECT_EQ(client.getText("/healthz").value(), "ok");
}

TEST(AgentClientTest, DefaultsToTheDocumentedSocketAndTimeout) {
  const auto client = AgentClient::forSocket(std::string(kDefaultAgentSocket));
  EXPECT_EQ(client.socketPath(), "/run/hostport/agent.sock");
  EXPECT_EQ(client.timeout(), 10s);
}

}  // namespace
}  // namespace hostport::agent::api
