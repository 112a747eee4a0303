#pragma once
// HTTPS to the API server: one kept-alive TLS connection, one request at a time, every step within
// a deadline. The server's certificate is verified against the cluster's CA and its name (or IP
// address); a client certificate is presented when the config has one. Not thread-safe: the
// publisher's one thread owns it (kube_client.h).

#include <chrono>
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

  /// How many TLS connections were opened: tests check keep-alive with it.
  int connections() const;

 private:
  struct State;
  explicit HttpsTransport(std::unique_ptr<State> state);
  std::unique_ptr<State> state_;
};

}  // namespace hostport::kube
