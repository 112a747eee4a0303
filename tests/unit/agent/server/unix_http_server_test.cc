// The control socket's transport against real Unix sockets in a temp dir: permissions and the
// socket's directory, the socket lock, size limits, framing, a slow client that must not stall
// anyone else, and a client that goes while its request is held.

#include "agent/server/unix_http_server.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include <atomic>
#include <boost/asio/io_context.hpp>
#include <chrono>
#include <cstring>
#include <filesystem>
#include <future>
#include <mutex>
#include <thread>

#include "agent/api/agent_client.h"
#include "common/unique_fd.h"
#include "tests/support/log_capture.h"
#include "tests/support/temp_dir.h"
#include "tests/support/wait.h"

namespace hostport::agent::server {
namespace {

using namespace std::chrono_literals;

class UnixHttpServerTest : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_FALSE(dir_.path().empty()) << "no temp dir";
    router_.add("POST", "/echo",
                [](const HttpRequest& request, const PathParams&, Responder respond) {
                  respond({200, "text/plain", request.body});
                });
    router_.add("GET", "/items/{id}",
                [](const HttpRequest&, const PathParams& params, Responder respond) {
                  respond({200, "text/plain", params.at("id")});
                });
    // Holds its request until the test answers it, as the pod socket's ?wait= does.
    router_.add("GET", "/hold",
                [this](const HttpRequest& request, const PathParams&, Responder respond) {
                  std::lock_guard lock(heldMutex_);
                  held_ = std::move(respond);
                  request.clientGone->onGone([this] { clientGone_ = true; });
                });
  }

  /// Answers the request /hold holds, once it holds one.
  void answerHeld(api::HttpResponse response) {
    ASSERT_TRUE(test::waitUntil([this] {
      std::lock_guard lock(heldMutex_);
      return static_cast<bool>(held_);
    }));
    Responder respond;
    {
      std::lock_guard lock(heldMutex_);
      respond = std::exchange(held_, nullptr);
    }
    respond(std::move(response));
  }

  bool holding() {
    std::lock_guard lock(heldMutex_);
    return static_cast<bool>(held_);
  }

  void TearDown() override {
    server_.reset();
    io_.stop();
    if (thread_.joinable()) thread_.join();
  }

  void start(ServerLimits limits = {}) {
    auto server = UnixHttpServer::listen(io_, path_, 0600, router_, limits);
    ASSERT_TRUE(server) << server.error().message;
    server_ = std::move(*server);
    thread_ = std::thread([this] { io_.run(); });
  }

  api::AgentClient client() const { return api::AgentClient::forSocket(path_, 2s); }

  UniqueFd rawConnect() const {
    UniqueFd fd(::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0));
    sockaddr_un address{};
    address.sun_family = AF_UNIX;
    std::snprintf(address.sun_path, sizeof address.sun_path, "%s", path_.c_str());
    EXPECT_EQ(::connect(fd.get(), reinterpret_cast<sockaddr*>(&address), sizeof address), 0);
    return fd;
  }

  /// Sends `request` on a connection of its own and reads until the server closes it or has sent
  /// one whole answer; the answer's text.
  std::string rawExchange(const std::string& request) const {
    UniqueFd fd = rawConnect();
    EXPECT_EQ(::send(fd.get(), request.data(), request.size(), MSG_NOSIGNAL),
              static_cast<ssize_t>(request.size()));
    return readAnswer(fd.get());
  }

  static std::string readAnswer(int fd) {
    timeval wait{10, 0};
    EXPECT_EQ(::setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &wait, sizeof wait), 0);
    std::string answer;
    char buffer[4096];
    for (;;) {
      const auto headerEnd = answer.find("\r\n\r\n");
      if (headerEnd != std::string::npos) {
        const auto length = answer.find("Content-Length: ");
        if (length != std::string::npos &&
            answer.size() >= headerEnd + 4 + std::stoul(answer.substr(length + 16))) {
          return answer;
        }
      }
      const ssize_t got = ::recv(fd, buffer, sizeof buffer, 0);
      if (got <= 0) return answer;
      answer.append(buffer, static_cast<std::size_t>(got));
    }
  }

  static unsigned statusOf(const std::string& answer) {
    return answer.starts_with("HTTP/1.1 ") ? std::stoul(answer.substr(9, 3)) : 0;
  }

  test::TempDir dir_;
  std::string path_ = (dir_ / "agent.sock").string();
  std::mutex heldMutex_;
  Responder held_;
  std::atomic<bool> clientGone_ = false;
  Router router_;
  boost::asio::io_context io_;
  std::unique_ptr<UnixHttpServer> server_;
  std::thread thread_;
};

TEST_F(UnixHttpServerTest, ServesRoutesWithDecodedPathParameters) {
  start();
  auto answer = client().exchange(api::HttpMethod::kGet, "/items/a%2Fb");
  ASSERT_TRUE(answer) << answer.error().message;
  EXPECT_EQ(answer->status, 200u);
  EXPECT_EQ(answer->body, "a/b");
  auto echoed = client().exchange(api::HttpMethod::kPost, "/echo", "hello");
  ASSERT_TRUE(echoed);
  EXPECT_EQ(echoed->body, "hello");
}

TEST_F(UnixHttpServerTest, AnswersUnknownPathsAndMethodsWithJsonErrors) {
  start();
  auto missing = client().exchange(api::HttpMethod::kGet, "/nope");
  ASSERT_TRUE(missing);
  EXPECT_EQ(missing->status, 404u);
  EXPECT_NE(missing->body.find("\"not_found\""), std::string::npos);
  auto wrongMethod = client().exchange(api::HttpMethod::kDelete, "/echo");
  ASSERT_TRUE(wrongMethod);
  EXPECT_EQ(wrongMethod->status, 405u);
}

TEST_F(UnixHttpServerTest, SocketIsOwnerOnly) {
  start();
  struct stat info {};
  ASSERT_EQ(::stat(path_.c_str(), &info), 0);
  EXPECT_TRUE(S_ISSOCK(info.st_mode));
  EXPECT_EQ(info.st_mode & 0777, 0600u);
}

TEST_F(UnixHttpServerTest, SecondServerOnTheSamePathIsRefusedAndTheFirstKeepsServing) {
  start();
  boost::asio::io_context otherIo;
  auto second = UnixHttpServer::listen(otherIo, path_, 0600, router_, {});
  ASSERT_FALSE(second);
  EXPECT_EQ(second.error().code, ErrorCode::kUnavailable);
  EXPECT_NE(second.error().message.find(path_), std::string::npos);
  auto answer = client().exchange(api::HttpMethod::kPost, "/echo", "still here");
  ASSERT_TRUE(answer) << answer.error().message;
  EXPECT_EQ(answer->body, "still here");
}

TEST_F(UnixHttpServerTest, ReplacesAStaleSocketFileNobodyServes) {
  {
    UniqueFd stale(::socket(AF_UNIX, SOCK_STREAM, 0));
    sockaddr_un address{};
    address.sun_family = AF_UNIX;
    std::snprintf(address.sun_path, sizeof address.sun_path, "%s", path_.c_str());
    ASSERT_EQ(::bind(stale.get(), reinterpret_cast<sockaddr*>(&address), sizeof address), 0);
  }  // closed: the file stays behind, as after a crash
  ASSERT_TRUE(std::filesystem::exists(path_));
  start();
  auto answer = client().exchange(api::HttpMethod::kPost, "/echo", "fresh");
  ASSERT_TRUE(answer) << answer.error().message;
  EXPECT_EQ(answer->body, "fresh");
}

TEST_F(UnixHttpServerTest, RefusesBodiesOverTheLimit) {
  ServerLimits limits;
  limits.maxBodyBytes = 1024;
  start(limits);
  auto answer = client().exchange(api::HttpMethod::kPost, "/echo", std::string(4096, 'x'));
  ASSERT_TRUE(answer) << answer.error().message;
  EXPECT_EQ(answer->status, 413u);
}

TEST_F(UnixHttpServerTest, SlowClientIsDroppedWithoutStallingOthers) {
  ServerLimits limits;
  limits.readTimeout = 1500ms;
  start(limits);
  UniqueFd slow = rawConnect();
  const std::string partial = "POST /echo HTTP/1.1\r\nHost: x\r\n";  // and then nothing
  ASSERT_EQ(::send(slow.get(), partial.data(), partial.size(), 0),
            static_cast<ssize_t>(partial.size()));

  auto answer = client().exchange(api::HttpMethod::kPost, "/echo", "fast");
  ASSERT_TRUE(answer) << answer.error().message;
  EXPECT_EQ(answer->body, "fast");
  // Served while the slow client still holds its connection open.
  char byte;
  EXPECT_EQ(::recv(slow.get(), &byte, 1, MSG_DONTWAIT), -1);
  EXPECT_EQ(errno, EAGAIN);

  // The server hangs up on the slow client once its deadline passes.
  timeval wait{10, 0};
  ASSERT_EQ(::setsockopt(slow.get(), SOL_SOCKET, SO_RCVTIMEO, &wait, sizeof wait), 0);
  EXPECT_EQ(::recv(slow.get(), &byte, 1, 0), 0) << "expected EOF after the read deadline";
}

TEST_F(UnixHttpServerTest, ShedsConnectionsOverTheCapWithOneLineASecond) {
  log::testing::LogCapture capture(log::Level::kInfo);
  ServerLimits limits;
  limits.maxConnections = 1;
  limits.readTimeout = 30s;
  start(limits);
  UniqueFd held = rawConnect();
  // The held connection counts once the server has accepted it.
  const auto deadline = std::chrono::steady_clock::now() + 10s;
  for (;;) {
    UniqueFd probe = rawConnect();
    char byte;
    timeval wait{10, 0};
    ASSERT_EQ(::setsockopt(probe.get(), SOL_SOCKET, SO_RCVTIMEO, &wait, sizeof wait), 0);
    ASSERT_EQ(::recv(probe.get(), &byte, 1, 0), 0) << "expected the server to hang up";
    if (!capture.events("server.connection_shed").empty()) break;
    ASSERT_LT(std::chrono::steady_clock::now(), deadline);
  }
  for (int i = 0; i < 5; ++i) {
    UniqueFd shed = rawConnect();
    char byte;
    timeval wait{10, 0};
    ASSERT_EQ(::setsockopt(shed.get(), SOL_SOCKET, SO_RCVTIMEO, &wait, sizeof wait), 0);
    EXPECT_EQ(::recv(shed.get(), &byte, 1, 0), 0) << "expected the server to hang up";
  }
  // Within the second of the first line: nothing more, however many were shed.
  EXPECT_THAT(capture.events("server.connection_shed"),
              ::testing::ElementsAre("server.connection_shed open=1 shed=1"));

  // Once the held connection is gone the server serves again, and the test ends as the others
  // do, after an answer, with no session left open and no accept handler still running.
  held.reset();
  while (!client().exchange(api::HttpMethod::kPost, "/echo", "x")) {
    ASSERT_LT(std::chrono::steady_clock::now(), deadline);
    std::this_thread::sleep_for(10ms);
  }
}

TEST_F(UnixHttpServerTest, LogsWhereItListensAndEachAnswerAtDebug) {
  log::testing::LogCapture capture(log::Level::kDebug);
  ServerLimits limits;
  limits.maxBodyBytes = 1024;
  limits.maxConnections = 8;
  start(limits);
  ASSERT_TRUE(client().exchange(api::HttpMethod::kGet, "/items/a%20b"));
  ASSERT_TRUE(client().exchange(api::HttpMethod::kDelete, "/echo"));
  ASSERT_TRUE(client().exchange(api::HttpMethod::kPost, "/echo", std::string(4096, 'x')));
  EXPECT_THAT(capture.events("server.listening"),
              ::testing::ElementsAre("server.listening socket=" + path_ + " max_connections=8"));
  const auto answered = capture.events("server.request");
  ASSERT_EQ(answered.size(), 3u) << capture.text();
  EXPECT_THAT(answered[0],
              ::testing::StartsWith("server.request method=GET path=/items/a%20b status=200 us="));
  EXPECT_THAT(answered[1],
              ::testing::StartsWith("server.request method=DELETE path=/echo status=405 us="));
  // Refused before its body was read: its header tells what it was.
  EXPECT_THAT(answered[2],
              ::testing::StartsWith("server.request method=POST path=/echo status=413 us="));
}

TEST_F(UnixHttpServerTest, MakesTheSocketsDirectory0755WhateverTheUmask) {
  path_ = (dir_ / "run" / "agent.sock").string();
  const mode_t was = ::umask(0);
  start();
  ::umask(was);
  struct stat info {};
  ASSERT_EQ(::stat((dir_ / "run").c_str(), &info), 0);
  EXPECT_EQ(info.st_mode & 07777, 0755u);
  auto answer = client().exchange(api::HttpMethod::kPost, "/echo", "x");
  ASSERT_TRUE(answer) << answer.error().message;
}

TEST_F(UnixHttpServerTest, RefusesADirectoryOthersMayWrite) {
  const auto open = dir_ / "open";
  ASSERT_EQ(::mkdir(open.c_str(), 0700), 0);
  ASSERT_EQ(::chmod(open.c_str(), 0777), 0);
  path_ = (open / "agent.sock").string();
  auto refused = UnixHttpServer::listen(io_, path_, 0600, router_, {});
  ASSERT_FALSE(refused);
  EXPECT_EQ(refused.error().code, ErrorCode::kNotAllowed);
  EXPECT_THAT(refused.error().message, ::testing::HasSubstr(open.string() + " is mode 0777"));
  EXPECT_FALSE(std::filesystem::exists(path_));
}

TEST_F(UnixHttpServerTest, AnswersABodyOverTheLimit413NamingItWhileTheClientStillSends) {
  ServerLimits limits;
  limits.maxBodyBytes = 1024;
  start(limits);
  // Far more than the socket's buffers hold: the server answers and closes while the client is
  // still sending, and the client must still read that answer.
  auto answer = client().exchange(api::HttpMethod::kPost, "/echo", std::string(8 << 20, 'x'));
  ASSERT_TRUE(answer) << answer.error().message;
  EXPECT_EQ(answer->status, 413u);
  EXPECT_THAT(answer->body,
              ::testing::HasSubstr("POST /echo: the request body exceeds the agent's limit of "
                                   "1024 bytes"));
}

TEST_F(UnixHttpServerTest, AnswersEachTransferEncodingAsRfc9112Says) {
  start();
  const std::string chunkedBody = "4\r\nbody\r\n0\r\n\r\n";
  const auto post = [&](const std::string& fields) {
    return "POST /echo HTTP/1.1\r\nHost: x\r\n" + fields + "\r\n" + chunkedBody;
  };
  const std::vector<std::pair<std::string, unsigned>> cases = {
      {post("Transfer-Encoding: chunked\r\n"), 200},
      {post("Transfer-Encoding: xchunked\r\n"), 400},
      {post("Transfer-Encoding: chunked, identity\r\n"), 400},
      {post("Transfer-Encoding: identity\r\n"), 400},
      {post("Transfer-Encoding: chunked, chunked\r\n"), 400},
      {post("Transfer-Encoding: chunked\r\nTransfer-Encoding: identity\r\n"), 400},
      {post("Transfer-Encoding: chunked\r\nContent-Length: 4\r\n"), 400},
      {"POST /echo HTTP/1.0\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n" + chunkedBody, 400},
      {post("Transfer-Encoding: gzip, chunked\r\n"), 501},
      {post("Transfer-Encoding: identity\r\nTransfer-Encoding: chunked\r\n"), 501},
      {"POST /echo HTTP/1.1\r\nHost: x\r\nContent-Length: 4\r\nContent-Length: 5\r\n\r\nbody", 400},
  };
  for (const auto& [request, status] : cases) {
    const std::string answer = rawExchange(request);
    EXPECT_EQ(statusOf(answer), status) << request << "\n---\n" << answer;
    if (status == 200) EXPECT_TRUE(answer.ends_with("\r\n\r\nbody")) << answer;
  }
}

TEST_F(UnixHttpServerTest, HearsAtOnceThatTheClientOfAHeldRequestHasGone) {
  ServerLimits limits;
  limits.maxConnections = 1;
  start(limits);
  {
    UniqueFd client = rawConnect();
    const std::string request = "GET /hold HTTP/1.1\r\nHost: x\r\n\r\n";
    ASSERT_EQ(::send(client.get(), request.data(), request.size(), MSG_NOSIGNAL),
              static_cast<ssize_t>(request.size()));
    ASSERT_TRUE(test::waitUntil([this] { return holding(); }));
  }  // closed while its request is held
  EXPECT_TRUE(test::waitUntil([this] { return clientGone_.load(); }));
  // The handler lets go, and the connection's slot is free for the next client.
  answerHeld({200, "text/plain", "nobody to read this"});
  const auto deadline = std::chrono::steady_clock::now() + 10s;
  while (!client().exchange(api::HttpMethod::kPost, "/echo", "next")) {
    ASSERT_LT(std::chrono::steady_clock::now(), deadline);
    std::this_thread::sleep_for(10ms);
  }
}

TEST_F(UnixHttpServerTest, KeepsTheRequestsPipelinedBehindAHeldOne) {
  start();
  UniqueFd client = rawConnect();
  const std::string requests =
      "GET /hold HTTP/1.1\r\nHost: x\r\n\r\n"
      "POST /echo HTTP/1.1\r\nHost: x\r\nContent-Length: 5\r\n\r\nafter";
  ASSERT_EQ(::send(client.get(), requests.data(), requests.size(), MSG_NOSIGNAL),
            static_cast<ssize_t>(requests.size()));
  ASSERT_TRUE(test::waitUntil([this] { return holding(); }));
  std::this_thread::sleep_for(50ms);  // time for the watch to read what follows, if it would
  EXPECT_FALSE(clientGone_.load());
  answerHeld({200, "text/plain", "held"});
  timeval wait{10, 0};
  ASSERT_EQ(::setsockopt(client.get(), SOL_SOCKET, SO_RCVTIMEO, &wait, sizeof wait), 0);
  std::string answers;
  char buffer[4096];
  while (!answers.ends_with("\r\n\r\nafter")) {
    const ssize_t got = ::recv(client.get(), buffer, sizeof buffer, 0);
    ASSERT_GT(got, 0) << answers;
    answers.append(buffer, static_cast<std::size_t>(got));
  }
  EXPECT_NE(answers.find("\r\n\r\nheldHTTP/1.1 200"), std::string::npos) << answers;
}

}  // namespace
}  // namespace hostport::agent::server
