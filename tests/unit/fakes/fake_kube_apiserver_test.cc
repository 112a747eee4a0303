// Tests of the fake Kubernetes API server through a small Beast client of their own, which
// verifies the server's certificate against the fake's CA as a real client does.

#include "tests/fakes/fake_kube_apiserver.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <openssl/ssl.h>
#include <openssl/x509v3.h>

#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/ssl.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>
#include <boost/beast/ssl.hpp>
#include <fstream>
#include <future>
#include <sstream>
#include <thread>

#include "tests/support/file_text.h"
#include "tests/support/result_assertions.h"
#include "tests/support/temp_dir.h"

namespace hostport::kube {
namespace {

namespace asio = boost::asio;
namespace beast = boost::beast;
namespace http = beast::http;
namespace ssl = asio::ssl;
using tcp = asio::ip::tcp;
using nlohmann::json;
using test::readText;
using ::testing::HasSubstr;
using namespace std::chrono_literals;
using Clock = std::chrono::steady_clock;

constexpr const char* kPod = "/api/v1/namespaces/games/pods/server-0";
constexpr const char* kNode = "/api/v1/nodes/node-a";
constexpr const char* kMerge = "application/merge-patch+json";
constexpr const char* kJsonPatch = "application/json-patch+json";
constexpr auto kClientTimeout = 5s;

/// What the test client got: an answer, or the error that ended the exchange.
struct ClientAnswer {
  beast::error_code error;
  unsigned status = 0;
  std::string body;
  std::string retryAfter;
  std::string contentType;

  json object() const { return json::parse(body, nullptr, false); }
};

/// A minimal HTTPS client: one connection, kept alive between requests, reopened after an error.
/// Every step has a deadline, so a test never hangs on the fake.
class TestClient {
 public:
  TestClient(const std::string& caPem, std::uint16_t port, std::string host = "127.0.0.1")
      : port_(port), host_(std::move(host)) {
    tls_.add_certificate_authority(asio::buffer(caPem));
    tls_.set_verify_mode(ssl::verify_peer);
  }

  void useClientCertificate(const tls::PemCertificate& certificate) {
    tls_.use_certificate_chain(asio::buffer(certificate.certificatePem));
    tls_.use_private_key(asio::buffer(certificate.privateKeyPem), ssl::context::pem);
  }

  /// Connects and completes the TLS handshake, verifying the server's name or address.
  beast::error_code connect() {
    stream_.emplace(io_, tls_);
    SSL* native = stream_->native_handle();
    if (beast::error_code ec; asio::ip::make_address(host_, ec), !ec) {
      X509_VERIFY_PARAM_set1_ip_asc(SSL_get0_param(native), host_.c_str());
    } else {
      SSL_set1_host(native, host_.c_str());
      SSL_set_tlsext_host_name(native, host_.c_str());
    }
    beast::error_code result;
    beast::get_lowest_layer(*stream_).expires_after(kClientTimeout);
    beast::get_lowest_layer(*stream_).async_connect(
        tcp::endpoint(asio::ip::address_v4::loopback(), port_), [&](beast::error_code ec) {
          result = ec;
          if (!ec) {
            stream_->async_handshake(ssl::stream_base::client,
                                     [&](beast::error_code ec) { result = ec; });
          }
        });
    run();
    if (result) stream_.reset();
    return result;
  }

  ClientAnswer request(std::string_view method, std::string_view target, std::string_view token,
                       std::string_view body = "", std::string_view contentType = "") {
    ClientAnswer answer;
    if (!stream_) answer.error = connect();
    if (answer.error) return answer;
    http::request<http::string_body> request(http::string_to_verb({method.data(), method.size()}),
                                             {target.data(), target.size()}, 11);
    request.set(http::field::host, host_);
    request.set(http::field::accept, "application/json");
    if (!token.empty()) request.set(http::field::authorization, "Bearer " + std::string(token));
    if (!contentType.empty()) request.set(http::field::content_type, std::string(contentType));
    request.body() = std::string(body);
    request.prepare_payload();
    http::response<http::string_body> response;
    beast::get_lowest_layer(*stream_).expires_after(kClientTimeout);
    http::async_write(*stream_, request, [&](beast::error_code ec, std::size_t) {
      answer.error = ec;
      if (!ec) {
        http::async_read(*stream_, buffer_, response,
                         [&](beast::error_code ec, std::size_t) { answer.error = ec; });
      }
    });
    run();
    if (answer.error) {
      stream_.reset();
      buffer_.clear();
      return answer;
    }
    answer.status = response.result_int();
    answer.body = response.body();
    answer.retryAfter = std::string(response[http::field::retry_after]);
    answer.contentType = std::string(response[http::field::content_type]);
    if (!response.keep_alive()) stream_.reset();
    return answer;
  }

 private:
  void run() {
    io_.restart();
    io_.run();
  }

  std::uint16_t port_;
  std::string host_;
  asio::io_context io_;
  ssl::context tls_{ssl::context::tls_client};
  std::optional<beast::ssl_stream<beast::tcp_stream>> stream_;
  beast::flat_buffer buffer_;
};

class FakeKubeApiServerTest : public ::testing::Test {
 protected:
  void SetUp() override {
    auto server = FakeKubeApiServer::start({.token = "token-1"});
    ASSERT_OK(server);
    server_ = std::move(*server);
    server_->putPod("games", "server-0", "uid-1", {{"hostport.io/ports", "game=udp/7777"}});
    server_->putNode("node-a");
  }

  TestClient client() const { return TestClient(server_->caPem(), server_->port()); }

  ClientAnswer get(TestClient& client, std::string_view path) {
    return client.request("GET", path, server_->token());
  }

  std::string resourceVersion(const char* path) const {
    return server_->object(path).value_or(json())["metadata"]["resourceVersion"];
  }

  std::unique_ptr<FakeKubeApiServer> server_;
};

TEST_F(FakeKubeApiServerTest, HandshakeVerifiesAgainstTheGeneratedCaByAddressAndName) {
  EXPECT_NE(server_->port(), 0);
  EXPECT_EQ(server_->url(), "https://127.0.0.1:" + std::to_string(server_->port()));
  TestClient byAddress = client();
  EXPECT_FALSE(byAddress.connect());
  TestClient byName(server_->caPem(), server_->port(), "localhost");
  EXPECT_FALSE(byName.connect());
}

TEST_F(FakeKubeApiServerTest, HandshakeFailsForAClientThatTrustsAnotherCaOrName) {
  auto otherCa =
      tls::CertificateAuthority::create("another CA", tls::Validity{std::chrono::hours(24)});
  ASSERT_OK(otherCa);
  TestClient stranger(otherCa->certificatePem(), server_->port());
  EXPECT_TRUE(stranger.connect());
  TestClient wrongName(server_->caPem(), server_->port(), "kubernetes.default.svc");
  EXPECT_TRUE(wrongName.connect());
}

TEST_F(FakeKubeApiServerTest, AnswersUnauthorizedWithoutOrWithAWrongToken) {
  TestClient c = client();
  for (const std::string_view token : {"", "token-2"}) {
    const ClientAnswer answer = c.request("GET", kPod, token);
    ASSERT_FALSE(answer.error) << answer.error.message();
    EXPECT_EQ(answer.status, 401u);
    EXPECT_EQ(answer.contentType, "application/json");
    EXPECT_EQ(answer.object(), json::parse(R"({"kind":"Status","apiVersion":"v1","metadata":{},
        "status":"Failure","message":"Unauthorized","reason":"Unauthorized","code":401})"));
  }
}

TEST_F(FakeKubeApiServerTest, GetReturnsTheSeededPodAnd404ForAMissingOne) {
  TestClient c = client();
  ClientAnswer answer = get(c, kPod);
  ASSERT_FALSE(answer.error) << answer.error.message();
  ASSERT_EQ(answer.status, 200u) << answer.body;
  const json pod = answer.object();
  EXPECT_EQ(pod["kind"], "Pod");
  EXPECT_EQ(pod["metadata"]["uid"], "uid-1");
  EXPECT_EQ(pod["metadata"]["annotations"]["hostport.io/ports"], "game=udp/7777");

  answer = get(c, "/api/v1/namespaces/games/pods/server-1");
  EXPECT_EQ(answer.status, 404u);
  EXPECT_EQ(answer.object()["reason"], "NotFound");
  EXPECT_EQ(answer.object()["code"], 404);

  answer = get(c, "/version");
  EXPECT_EQ(answer.status, 200u);
  EXPECT_EQ(answer.object()["major"], "1");
}

TEST_F(FakeKubeApiServerTest, DiscoveryNamesTheResourcesItServes) {
  TestClient c = client();
  EXPECT_EQ(get(c, "/api").object()["versions"], json({"v1"}));
  EXPECT_EQ(get(c, "/apis").object()["groups"], json::array());
  const json resources = get(c, "/api/v1").object()["resources"];
  std::vector<std::string> names;
  for (const json& resource : resources) names.push_back(resource["name"]);
  EXPECT_THAT(names, ::testing::ElementsAre("pods", "pods/status", "nodes", "nodes/status"));
}

TEST_F(FakeKubeApiServerTest, MergePatchChangesThePodAndBumpsItsResourceVersion) {
  TestClient c = client();
  const std::string before = resourceVersion(kPod);
  const ClientAnswer answer =
      c.request("PATCH", kPod, "token-1",
                R"({"metadata":{"annotations":{"hostport.io/allocated-game":"30000"}}})", kMerge);
  ASSERT_EQ(answer.status, 200u) << answer.body;
  const json pod = *server_->object(kPod);
  EXPECT_EQ(answer.object(), pod);
  EXPECT_EQ(pod["metadata"]["annotations"]["hostport.io/allocated-game"], "30000");
  EXPECT_EQ(pod["metadata"]["annotations"]["hostport.io/ports"], "game=udp/7777");
  EXPECT_EQ(pod["metadata"]["uid"], "uid-1");
  EXPECT_GT(std::stoull(resourceVersion(kPod)), std::stoull(before));
}

TEST_F(FakeKubeApiServerTest, JsonPatchWithAPassingUidTestApplies) {
  TestClient c = client();
  const ClientAnswer answer = c.request("PATCH", kPod, "token-1", R"([
      {"op":"test","path":"/metadata/uid","value":"uid-1"},
      {"op":"add","path":"/metadata/annotations/hostport.io~1assigned","value":"{}"}])",
                                        kJsonPatch);
  ASSERT_EQ(answer.status, 200u) << answer.body;
  EXPECT_EQ((*server_->object(kPod))["metadata"]["annotations"]["hostport.io/assigned"], "{}");
}

TEST_F(FakeKubeApiServerTest, JsonPatchWithAFailingUidTestIsInvalidAndChangesNothing) {
  // The pod was re-created under the same name: its uid is no longer the one a client recorded.
  server_->deleteObject(kPod);
  const json recreated = server_->putPod("games", "server-0");
  ASSERT_NE(recreated["metadata"]["uid"], "uid-1");
  TestClient c = client();
  const ClientAnswer answer = c.request("PATCH", kPod, "token-1", R"([
      {"op":"test","path":"/metadata/uid","value":"uid-1"},
      {"op":"add","path":"/metadata/annotations","value":{"hostport.io/assigned":"{}"}}])",
                                        kJsonPatch);
  EXPECT_EQ(answer.status, 422u);
  EXPECT_EQ(answer.object()["reason"], "Invalid");
  EXPECT_EQ(*server_->object(kPod), recreated);
}

TEST_F(FakeKubeApiServerTest, EveryWriteIncrementsTheResourceVersion) {
  TestClient c = client();
  std::uint64_t last = std::stoull(resourceVersion(kNode));
  for (int i = 0; i < 3; ++i) {
    const json patch = {{"status", {{"capacity", {{"hostport.io/default", std::to_string(i)}}}}}};
    const ClientAnswer answer =
        c.request("PATCH", "/api/v1/nodes/node-a/status", "token-1", patch.dump(), kMerge);
    ASSERT_EQ(answer.status, 200u) << answer.body;
    const std::uint64_t now =
        std::stoull(answer.object()["metadata"]["resourceVersion"].get<std::string>());
    EXPECT_GT(now, last);
    last = now;
  }
  EXPECT_EQ((*server_->object(kNode))["status"]["capacity"]["hostport.io/default"], "2");
}

TEST_F(FakeKubeApiServerTest, StrategicMergePatchIsUnsupportedMediaType) {
  TestClient c = client();
  const ClientAnswer answer =
      c.request("PATCH", kPod, "token-1", "{}", "application/strategic-merge-patch+json");
  EXPECT_EQ(answer.status, 415u);
}

TEST_F(FakeKubeApiServerTest, TooManyRequestsCarriesRetryAfterThenTheRequestIsServed) {
  server_->injectFault(FakeKubeFault::answer(429, 3).forMethod("PATCH"));
  EXPECT_EQ(server_->pendingFaults(), 1u);
  TestClient c = client();
  EXPECT_EQ(get(c, kPod).status, 200u);  // a GET does not match the fault
  const std::string patch = R"({"metadata":{"labels":{"l":"v"}}})";
  ClientAnswer answer = c.request("PATCH", kPod, "token-1", patch, kMerge);
  EXPECT_EQ(answer.status, 429u);
  EXPECT_EQ(answer.retryAfter, "3");
  EXPECT_EQ(answer.object()["reason"], "TooManyRequests");
  EXPECT_FALSE((*server_->object(kPod))["metadata"].contains("labels"));
  answer = c.request("PATCH", kPod, "token-1", patch, kMerge);
  EXPECT_EQ(answer.status, 200u);
  EXPECT_EQ(answer.retryAfter, "");
  EXPECT_EQ(server_->pendingFaults(), 0u);
}

TEST_F(FakeKubeApiServerTest, FaultsAreTakenInOrderByTheRequestsTheyMatch) {
  server_->injectFault(FakeKubeFault::answer(500).on("/api/v1/nodes").repeated(2));
  server_->injectFault(FakeKubeFault::answer(503));
  server_->injectFault(FakeKubeFault::answer(409));
  TestClient c = client();
  EXPECT_EQ(get(c, kPod).status, 503u);
  EXPECT_EQ(get(c, kNode).status, 500u);
  EXPECT_EQ(get(c, kPod).status, 409u);
  EXPECT_EQ(get(c, kPod).status, 200u);
  EXPECT_EQ(get(c, kNode).status, 500u);
  EXPECT_EQ(get(c, kNode).status, 200u);
  server_->injectFault(FakeKubeFault::answer(500).repeated(100));
  server_->clearFaults();
  EXPECT_EQ(server_->pendingFaults(), 0u);
  EXPECT_EQ(get(c, kNode).status, 200u);
}

TEST_F(FakeKubeApiServerTest, ADroppedConnectionAnswersNothingAndChangesNothing) {
  server_->injectFault(FakeKubeFault::dropConnection());
  TestClient c = client();
  const json before = *server_->object(kPod);
  const ClientAnswer dropped =
      c.request("PATCH", kPod, "token-1", R"({"metadata":{"labels":{"l":"v"}}})", kMerge);
  EXPECT_TRUE(dropped.error);
  EXPECT_EQ(dropped.status, 0u);
  EXPECT_EQ(*server_->object(kPod), before);
  EXPECT_EQ(get(c, kPod).status, 200u);  // on a new connection
  EXPECT_EQ(server_->connectionsAccepted(), 2u);
  ASSERT_EQ(server_->requests().size(), 2u);
  EXPECT_EQ(server_->requests()[0].status, 0u);
}

TEST_F(FakeKubeApiServerTest, ADroppedAnswerLeavesTheRequestServed) {
  server_->injectFault(FakeKubeFault::dropAnswer());
  TestClient c = client();
  const ClientAnswer dropped =
      c.request("PATCH", kPod, "token-1", R"({"metadata":{"labels":{"l":"v"}}})", kMerge);
  EXPECT_TRUE(dropped.error);
  EXPECT_EQ((*server_->object(kPod))["metadata"]["labels"]["l"], "v");
}

TEST_F(FakeKubeApiServerTest, ASlowAnswerWaitsWhileOtherConnectionsAreServed) {
  constexpr auto kDelay = 400ms;
  server_->injectFault(FakeKubeFault::slow(kDelay).on(kNode));
  auto slow = std::async(std::launch::async, [this] {
    TestClient c = client();
    const auto started = Clock::now();
    const ClientAnswer answer = get(c, kNode);
    return std::make_pair(answer.status, Clock::now() - started);
  });
  // Wait until the slow request is in, then ask on another connection.
  for (int i = 0; i < 200 && server_->requests().empty(); ++i) std::this_thread::sleep_for(5ms);
  TestClient fast = client();
  const auto started = Clock::now();
  EXPECT_EQ(get(fast, kPod).status, 200u);
  EXPECT_LT(Clock::now() - started, kDelay);
  const auto [status, elapsed] = slow.get();
  EXPECT_EQ(status, 200u);
  EXPECT_GE(elapsed, kDelay);
}

TEST_F(FakeKubeApiServerTest, ARotatedTokenReplacesTheOldOne) {
  TestClient c = client();
  server_->setToken("token-2");
  EXPECT_EQ(server_->token(), "token-2");
  EXPECT_EQ(c.request("GET", kPod, "token-1").status, 401u);
  EXPECT_EQ(c.request("GET", kPod, "token-2").status, 200u);
}

TEST_F(FakeKubeApiServerTest, TheOldTokenIsAcceptedForTheGrace) {
  TestClient c = client();
  server_->setToken("token-2", 300ms);
  EXPECT_EQ(c.request("GET", kPod, "token-1").status, 200u);
  EXPECT_EQ(c.request("GET", kPod, "token-2").status, 200u);
  std::this_thread::sleep_for(350ms);
  EXPECT_EQ(c.request("GET", kPod, "token-1").status, 401u);
  EXPECT_EQ(c.request("GET", kPod, "token-2").status, 200u);
}

TEST_F(FakeKubeApiServerTest, AClientCertificateOfTheCaAuthenticates) {
  auto certificate = server_->ca().issueClient("system:node:node-a", {"system:nodes"},
                                               tls::Validity{std::chrono::hours(24)});
  ASSERT_OK(certificate);
  TestClient c = client();
  c.useClientCertificate(*certificate);
  EXPECT_EQ(c.request("GET", kPod, "").status, 200u);
  EXPECT_EQ(server_->requests().back().clientCertificate, "system:node:node-a");
}

TEST_F(FakeKubeApiServerTest, KeepAliveServesManyRequestsOnOneConnection) {
  TestClient c = client();
  for (int i = 0; i < 5; ++i) EXPECT_EQ(get(c, kPod).status, 200u);
  EXPECT_EQ(server_->connectionsAccepted(), 1u);
}

TEST_F(FakeKubeApiServerTest, TheLogRecordsEachRequestInOrder) {
  TestClient c = client();
  const auto started = Clock::now();
  get(c, kPod);
  c.request("PATCH", "/api/v1/nodes/node-a/status?fieldManager=hostport", "token-1",
            R"({"status":{}})", kMerge);
  c.request("GET", kPod, "nope");
  ASSERT_TRUE(server_->waitForRequests(3, 1s));
  const std::vector<FakeKubeRequest> log = server_->requests();
  ASSERT_EQ(log.size(), 3u);
  EXPECT_EQ(log[0].method, "GET");
  EXPECT_EQ(log[0].path, kPod);
  EXPECT_EQ(log[0].bearerToken, "token-1");
  EXPECT_EQ(log[0].status, 200u);
  EXPECT_GE(log[0].received, started);
  EXPECT_EQ(log[1].method, "PATCH");
  EXPECT_EQ(log[1].target, "/api/v1/nodes/node-a/status?fieldManager=hostport");
  EXPECT_EQ(log[1].path, "/api/v1/nodes/node-a/status");
  EXPECT_EQ(log[1].contentType, kMerge);
  EXPECT_EQ(log[1].body, R"({"status":{}})");
  EXPECT_LE(log[0].received, log[1].received);
  EXPECT_EQ(log[2].status, 401u);
  server_->clearRequests();
  EXPECT_TRUE(server_->requests().empty());
  EXPECT_FALSE(server_->waitForRequests(1, 10ms));
}

TEST_F(FakeKubeApiServerTest, StopsAtOnceWhileAClientHoldsAConnectionOrWaitsForAnAnswer) {
  TestClient idle = client();
  ASSERT_FALSE(idle.connect());
  server_->injectFault(FakeKubeFault::slow(1h));
  auto waiting = std::async(std::launch::async, [this] {
    TestClient c = client();
    return get(c, kPod);
  });
  for (int i = 0; i < 200 && server_->requests().empty(); ++i) std::this_thread::sleep_for(5ms);
  ASSERT_EQ(server_->requests().size(), 1u);
  const auto started = Clock::now();
  server_.reset();
  EXPECT_LT(Clock::now() - started, 1s);
  const ClientAnswer answer = waiting.get();
  EXPECT_TRUE(answer.error);
}

TEST_F(FakeKubeApiServerTest, WritesAKubeconfigAndItsFiles) {
  test::TempDir dir;
  auto kubeconfig = server_->writeKubeconfig(dir.path());
  ASSERT_OK(kubeconfig);
  const std::string text = readText(*kubeconfig);
  EXPECT_THAT(text, HasSubstr("server: \"" + server_->url() + "\""));
  EXPECT_THAT(text, HasSubstr("certificate-authority: \"" + (dir / "ca.crt").string() + "\""));
  EXPECT_THAT(text, HasSubstr("token: \"token-1\""));
  EXPECT_THAT(text, HasSubstr("current-context: fake"));
  EXPECT_EQ(readText(dir / "ca.crt"), server_->caPem());

  FakeKubeconfigOptions options;
  options.host = "localhost";
  options.inlineCa = true;
  options.credentials = FakeKubeconfigOptions::Credentials::kTokenFile;
  kubeconfig = server_->writeKubeconfig(dir.path(), options);
  ASSERT_OK(kubeconfig);
  const std::string inlined = readText(*kubeconfig);
  EXPECT_THAT(inlined, HasSubstr("server: \"https://localhost:"));
  EXPECT_THAT(inlined, HasSubstr("certificate-authority-data: LS0tLS1CRUdJTi"));
  EXPECT_THAT(inlined, HasSubstr("tokenFile: \"" + (dir / "token").string() + "\""));
  EXPECT_EQ(readText(dir / "token"), "token-1");

  options.credentials = FakeKubeconfigOptions::Credentials::kClientCertificate;
  ASSERT_OK(server_->writeKubeconfig(dir.path(), options));
  EXPECT_THAT(readText(dir / "client.crt"), HasSubstr("BEGIN CERTIFICATE"));
  EXPECT_THAT(readText(dir / "client.key"), HasSubstr("BEGIN PRIVATE KEY"));
}

TEST_F(FakeKubeApiServerTest, WritesAServiceAccountDirectoryAndTheInClusterEnvironment) {
  test::TempDir dir;
  ASSERT_OK(server_->writeServiceAccount(dir / "serviceaccount", "hostport-system"));
  EXPECT_EQ(readText(dir / "serviceaccount" / "token"), "token-1");
  EXPECT_EQ(readText(dir / "serviceaccount" / "ca.crt"), server_->caPem());
  EXPECT_EQ(readText(dir / "serviceaccount" / "namespace"), "hostport-system");
  const auto env = server_->inClusterEnvironment();
  EXPECT_EQ(env.at("KUBERNETES_SERVICE_HOST"), "127.0.0.1");
  EXPECT_EQ(env.at("KUBERNETES_SERVICE_PORT"), std::to_string(server_->port()));
}

}  // namespace
}  // namespace hostport::kube
