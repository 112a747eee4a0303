// The TLS listener (agent/server/tls_http_server.h) on 127.0.0.1 with a kernel-chosen port: it
// serves its router to a client that trusts its CA (the Kubernetes client, kube/), keeps
// connections alive, speaks TLS 1.2 and later only, and takes a new certificate without dropping
// a connection.

#include "agent/server/tls_http_server.h"

#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <openssl/ssl.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <boost/asio/io_context.hpp>
#include <thread>

#include "common/unique_fd.h"
#include "kube/https_transport.h"
#include "tests/support/result_assertions.h"
#include "tests/support/tls_probe.h"
#include "tls/certificate_authority.h"

namespace hostport::agent::server {
namespace {

constexpr tls::Validity kDay{std::chrono::hours(24)};
constexpr std::chrono::milliseconds kTimeout{5000};

class TlsHttpServerTest : public ::testing::Test {
 protected:
  void SetUp() override {
    router_.add("POST", "/echo",
                [](const HttpRequest& request, const PathParams&, Responder respond) {
                  respond({200, "text/plain", "got " + request.body});
                });
    auto ca = tls::CertificateAuthority::create("test CA", kDay);
    ASSERT_OK(ca);
    ca_ = std::make_unique<tls::CertificateAuthority>(std::move(*ca));
  }

  void TearDown() override {
    server_.reset();
    io_.stop();
    if (thread_.joinable()) thread_.join();
  }

  TlsIdentity identity() {
    auto issued = ca_->issueServer({"localhost"}, {"127.0.0.1"}, kDay);
    EXPECT_OK(issued);
    lastCertificate_ = issued->certificatePem;
    auto identity = TlsIdentity::fromPem(issued->certificatePem, issued->privateKeyPem);
    EXPECT_OK(identity);
    return std::move(*identity);
  }

  void start(ServerLimits limits = {}) {
    auto server =
        TlsHttpServer::listen(io_, *IpAddress::parse("127.0.0.1"), 0, router_, limits, identity());
    ASSERT_OK(server);
    server_ = std::move(*server);
    thread_ = std::thread([this] { io_.run(); });
  }

  /// A client that trusts the CA alone, as the API server trusts a webhook's caBundle.
  std::unique_ptr<kube::HttpsTransport> client() const {
    kube::ClusterConfig config;
    config.host = "127.0.0.1";
    config.port = server_->port();
    config.caPem = ca_->certificatePem();
    auto transport = kube::HttpsTransport::create(config);
    EXPECT_OK(transport);
    return std::move(*transport);
  }

  static Result<kube::ApiResponse> post(kube::HttpsTransport& client, std::string body) {
    return client.exchange({"POST", "/echo", "text/plain", std::move(body)}, "", kTimeout);
  }

  Router router_;
  boost::asio::io_context io_;
  std::unique_ptr<tls::CertificateAuthority> ca_;
  std::string lastCertificate_;
  std::unique_ptr<TlsHttpServer> server_;
  std::thread thread_;
};

TEST_F(TlsHttpServerTest, ServesItsRouterToAClientThatTrustsItsCaOverOneConnection) {
  start();
  auto https = client();
  for (int i = 0; i < 3; ++i) {
    ASSERT_OK_AND_ASSIGN(const auto answer, post(*https, "review " + std::to_string(i)));
    EXPECT_EQ(answer.status, 200);
    EXPECT_EQ(answer.body, "got review " + std::to_string(i));
  }
  EXPECT_EQ(https->connections(), 1);
}

TEST_F(TlsHttpServerTest, ANewCertificateServesNewConnectionsAndDropsNoOldOne) {
  start();
  auto https = client();
  ASSERT_OK(post(*https, "before"));
  const std::string first = lastCertificate_;
  ASSERT_OK_AND_ASSIGN(const auto servedBefore, test::servedCertificate(server_->port()));
  EXPECT_EQ(servedBefore, first);

  server_->setIdentity(identity());
  ASSERT_NE(lastCertificate_, first);
  ASSERT_OK_AND_ASSIGN(const auto servedAfter, test::servedCertificate(server_->port()));
  EXPECT_EQ(servedAfter, lastCertificate_);
  // The connection made before the rotation goes on with the certificate it started with.
  ASSERT_OK_AND_ASSIGN(const auto answer, post(*https, "after"));
  EXPECT_EQ(answer.body, "got after");
  EXPECT_EQ(https->connections(), 1);
  // And a new client, trusting the same CA, is served the new one.
  auto fresh = client();
  ASSERT_OK(post(*fresh, "fresh"));
}

TEST_F(TlsHttpServerTest, AClientChecksTheNameItIsGivenRatherThanTheAddress) {
  start();
  auto named = [&](std::string name) {
    kube::ClusterConfig config;
    config.host = "127.0.0.1";
    config.port = server_->port();
    config.caPem = ca_->certificatePem();
    config.tlsServerName = std::move(name);
    return std::move(*kube::HttpsTransport::create(config));
  };
  auto localhost = named("localhost");  // the certificate names localhost and 127.0.0.1
  EXPECT_OK(post(*localhost, "named"));
  auto other = named("hostport-admission.hostport.svc");
  const auto refused = post(*other, "misnamed");
  ASSERT_FALSE(refused);
  EXPECT_EQ(refused.error().code, ErrorCode::kUnavailable);
}

TEST_F(TlsHttpServerTest, SpeaksTls12AndLaterOnly) {
  start();
  ASSERT_OK_AND_ASSIGN(const bool tls11, test::acceptsTlsVersion(server_->port(), TLS1_1_VERSION));
  EXPECT_FALSE(tls11);
  ASSERT_OK_AND_ASSIGN(const bool tls12, test::acceptsTlsVersion(server_->port(), TLS1_2_VERSION));
  EXPECT_TRUE(tls12);
  ASSERT_OK_AND_ASSIGN(const bool tls13, test::acceptsTlsVersion(server_->port(), TLS1_3_VERSION));
  EXPECT_TRUE(tls13);
}

TEST_F(TlsHttpServerTest, DropsAClientThatNeverHandshakes) {
  start({.readTimeout = std::chrono::milliseconds(200)});
  UniqueFd fd(::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0));
  sockaddr_in address{};
  address.sin_family = AF_INET;
  address.sin_port = htons(server_->port());
  address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  ASSERT_EQ(::connect(fd.get(), reinterpret_cast<sockaddr*>(&address), sizeof address), 0);
  pollfd waiting{fd.get(), POLLIN, 0};
  ASSERT_EQ(::poll(&waiting, 1, 5000), 1) << "the connection is still open after 5 s";
  char byte = 0;
  EXPECT_LE(::read(fd.get(), &byte, 1), 0) << "closed, with nothing said";
}

TEST_F(TlsHttpServerTest, RefusesAKeyThatIsNotTheCertificates) {
  ASSERT_OK_AND_ASSIGN(const auto server, ca_->issueServer({"localhost"}, {}, kDay));
  ASSERT_OK_AND_ASSIGN(const auto other, ca_->issueServer({"localhost"}, {}, kDay));
  const auto refused = TlsIdentity::fromPem(server.certificatePem, other.privateKeyPem);
  ASSERT_FALSE(refused);
  EXPECT_EQ(refused.error().code, ErrorCode::kInvalidArgument);
  EXPECT_FALSE(TlsIdentity::fromPem("junk", server.privateKeyPem));
}

}  // namespace
}  // namespace hostport::agent::server
