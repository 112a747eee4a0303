#pragma once
// A fake hostport-agent for tests of the agent's HTTP client: it speaks just enough HTTP/1.1 on a
// Unix socket to record each request and write back a canned answer.

#include <functional>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "tests/support/temp_dir.h"

namespace hostport::agent::api {

/// What the fake server saw of one request.
struct RecordedRequest {
  std::string method;
  std::string target;
  std::string headers;
  std::string body;
};

/// A canned-answer HTTP server on a Unix socket in a fresh test::TempDir. Each connection gets
/// handler(request) written back verbatim, then is closed; nullopt holds the connection open
/// without answering until the server stops (a wedged agent).
class FakeAgentServer {
 public:
  using Handler = std::function<std::optional<std::string>(const RecordedRequest&)>;

  /// Listens at once; throws std::runtime_error when the socket cannot be set up.
  explicit FakeAgentServer(Handler handler);
  FakeAgentServer(const FakeAgentServer&) = delete;
  FakeAgentServer& operator=(const FakeAgentServer&) = delete;
  ~FakeAgentServer();

  const std::string& path() const { return path_; }

  std::vector<RecordedRequest> requests() const;

  /// A complete HTTP answer with a Content-Length.
  static std::string reply(unsigned status, const std::string& body,
                           const std::string& contentType = "application/json");

 private:
  /// Waits for fd to become readable; false when the server is stopping.
  bool waitReadable(int fd);
  void serve();
  bool readRequest(int connection, RecordedRequest& request);

  Handler handler_;
  test::TempDir dir_;
  std::string path_;
  int listener_ = -1;
  int stop_[2] = {-1, -1};
  std::thread thread_;
  std::vector<int> held_;
  mutable std::mutex mutex_;
  std::vector<RecordedRequest> requests_;
};

}  // namespace hostport::agent::api
