#pragma once
// HTTPS to the API server: one kept-alive TLS connection, one request at a time, every step within
// a deadline. The server's certificate is verified against the cluster's CA and its name (or IP
// address); a client certificate is presented when the config has one. Not thread-safe: one
// thread owns it (kube_client.h), but for cancel(), which ends its streams from any thread.

#include <chrono>
#include <functional>
#include <map>
#include <memory>
#include <string>

#include "common/error.h"
#include "kube/cluster_config.h"

namespace hostport::kube {

struct ApiRequest {
  std::string method;  // GET, PATCH, ...
  std::string target;  // "/api/v1/namespaces/default/pods/web-0"
  std::string contentType;
  std::string body;
};

struct ApiResponse {
  int status = 0;
  std::string body;
  std::map<std::string, std::string> headers;  // names in lower case
};

class HttpsTransport {
 public:
  /// Builds the TLS context: the CA (or the system's roots when the config has none), the client
  /// certificate. kInvalidArgument when a PEM does not load.
  static Result<std::unique_ptr<HttpsTransport>> create(const ClusterConfig& config);
  ~HttpsTransport();
  HttpsTransport(const HttpsTransport&) = delete;
  HttpsTransport& operator=(const HttpsTransport&) = delete;

  /// Sends `request` with `Authorization: Bearer <token>` (none when `token` is empty), connecting
  /// first when no connection is open, and reads the response, all within `timeout`. kUnavailable
  /// for anything that kept an answer from coming (resolve, connect, TLS, I/O, the deadline); the
  /// connection is dropped then, and the next call opens a new one. Any HTTP status is a
  /// response, not an error.
  Result<ApiResponse> exchange(const ApiRequest& request, const std::string& token,
                               std::chrono::milliseconds timeout);

  /// Sends `request` like exchange() and hands a 2xx response's body to `onData` as it arrives,
  /// for a body that lasts minutes (a watch: chunks of JSON lines), until it ends, `onData`
  /// returns false, nothing arrives for `idleTimeout`, or cancel() is called. `connectTimeout`
  /// covers connecting and sending. Returns the status and headers, and the body of any other
  /// status (a Status, read whole); kUnavailable for what kept the body from ending: no
  /// connection, an I/O error, the idle deadline, cancel(). The connection is dropped unless the
  /// body ended.
  Result<ApiResponse> stream(const ApiRequest& request, const std::string& token,
                             std::chrono::milliseconds connectTimeout,
                             std::chrono::milliseconds idleTimeout,
                             const std::function<bool(std::string_view)>& onData);

  /// Ends the stream() in progress, from any thread, and every later one at once: for shutdown.
  void cancel();

  /// How many TLS connections were opened: tests check keep-alive with it.
  int connections() const;

 private:
  struct State;
  explicit HttpsTransport(std::unique_ptr<State> state);
  std::unique_ptr<State> state_;
};

}  // namespace hostport::kube
