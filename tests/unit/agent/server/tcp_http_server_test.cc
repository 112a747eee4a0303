// The TCP listener (agent/server/tcp_http_server.h) on 127.0.0.1 with a kernel-chosen port: it
// serves its router and nothing else, with the same limits as the Unix control socket.

#include "agent/server/tcp_http_server.h"

#include <arpa/inet.h>
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <boost/asio/io_context.hpp>
#include <string>
#include <thread>

#include "common/unique_fd.h"
#include "tests/support/log_capture.h"

namespace hostport::agent::server {
namespace {

using ::testing::HasSubstr;
using ::testing::StartsWith;

class TcpHttpServerTest : public ::testing::Test {
 protected:
  void SetUp() override {
    router_.add("GET", "/metrics", [](const HttpRequest&, const PathParams&, Responder respond) {
      respond({200, "text/plain", "hostport_leases 0\n"});
    });
  }

  void TearDown() override {
    server_.reset();
    io_.stop();
    if (thread_.joinable()) thread_.join();
  }

  void start(ServerLimits limits = {}) {
    // Port 0: the kernel picks a free one; port() tells which.
    auto server = TcpHttpServer::listen(io_, *IpAddress::parse("127.0.0.1"), 0, router_, limits);
    ASSERT_TRUE(server) << server.error().message;
    server_ = std::move(*server);
    thread_ = std::thread([this] { io_.run(); });
  }

  /// Sends `request` as it is and reads the answer until the server closes.
  std::string roundTrip(const std::string& request) const {
    UniqueFd fd(::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0));
    sockaddr_in address{};
    address.sin_family = AF_INET;
    address.sin_port = htons(server_->port());
    address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    if (::connect(fd.get(), reinterpret_cast<sockaddr*>(&address), sizeof address) != 0) {
      return "connect failed";
    }
    timeval timeout{5, 0};
    ::setsockopt(fd.get(), SOL_SOCKET, SO_RCVTIMEO, &timeout, sizeof timeout);
    (void)!::write(fd.get(), request.data(), request.size());
    std::string answer;
    char buffer[4096];
    for (ssize_t n; (n = ::read(fd.get(), buffer, sizeof buffer)) > 0;) answer.append(buffer, n);
    return answer;
  }

  std::string get(const std::string& path) const {
    return roundTrip("GET " + path + " HTTP/1.1\r\nHost: agent\r\nConnection: close\r\n\r\n");
  }

  Router router_;
  boost::asio::io_context io_;
  std::unique_ptr<TcpHttpServer> server_;
  std::thread thread_;
};

TEST_F(TcpHttpServerTest, ServesItsRouterOverTcp) {
  start();
  ASSERT_NE(server_->port(), 0);
  const auto answer = get("/metrics");
  EXPECT_THAT(answer, StartsWith("HTTP/1.1 200"));
  EXPECT_THAT(answer, HasSubstr("hostport_leases 0\n"));
}

TEST_F(TcpHttpServerTest, AnswersPathsOutsideItsRouterWith404) {
  start();
  EXPECT_THAT(get("/v1/attachments"), StartsWith("HTTP/1.1 404"));
  EXPECT_THAT(get("/healthz"), StartsWith("HTTP/1.1 404"));
}

TEST_F(TcpHttpServerTest, RefusesHeadersOverTheLimit) {
  ServerLimits limits;
  limits.maxHeaderBytes = 256;
  start(limits);
  const auto answer = roundTrip(
      "GET /metrics HTTP/1.1\r\nHost: agent\r\nX-Pad: " + std::string(1024, 'a') + "\r\n\r\n");
  EXPECT_THAT(answer, StartsWith("HTTP/1.1 413"));
}

TEST_F(TcpHttpServerTest, LogsTheAddressItListensOn) {
  log::testing::LogCapture capture(log::Level::kInfo);
  start();
  EXPECT_THAT(capture.events("server.listening"),
              ::testing::ElementsAre("server.listening address=127.0.0.1:" +
                                     std::to_string(server_->port()) + " max_connections=1024"));
}

TEST_F(TcpHttpServerTest, APortInUseIsAnErrorNamingTheAddress) {
  start();
  boost::asio::io_context otherIo;
  auto second =
      TcpHttpServer::listen(otherIo, *IpAddress::parse("127.0.0.1"), server_->port(), router_, {});
  ASSERT_FALSE(second);
  EXPECT_EQ(second.error().code, ErrorCode::kIo);
  EXPECT_THAT(second.error().message,
              HasSubstr("cannot listen on 127.0.0.1:" + std::to_string(server_->port())));
}

}  // namespace
}  // namespace hostport::agent::server
