#pragma once
// The agent's Kubernetes API client: requests over HttpsTransport, paced by a RateLimiter,
// retried with Backoff on what is worth retrying, authenticated with the current BearerToken.
//
// Design note: blocking, for one thread (cancelStreams() aside). The agent talks to the API server
// only from its publisher thread, never on the ADD path (docs/design.md, "The cluster sees the
// ports"), so a slow or absent API server delays publication and nothing else. Waiting (rate limit,
// backoff) goes through `Wait`, which the agent cuts short at shutdown and tests replace.

#include <atomic>
#include <chrono>
#include <functional>
#include <memory>
#include <optional>
#include <random>
#include <string>

#include "common/error.h"
#include "common/prometheus_text.h"
#include "kube/backoff.h"
#include "kube/bearer_token.h"
#include "kube/cluster_config.h"
#include "kube/https_transport.h"
#include "kube/rate_limiter.h"

namespace hostport::kube {

struct KubeClientOptions {
  double qps = 5;  // client-go's defaults
  int burst = 10;
  std::chrono::milliseconds timeout{10'000};  // one attempt, connect included
  int maxAttempts = 6;                        // then the caller's own retry (the outbox) takes over
  BackoffPolicy backoff;

  /// The defaults, paced at `qps` requests a second in bursts of `burst` (the --kube-api-qps and
  /// --kube-api-burst of the agent and the admission server).
  static KubeClientOptions paced(uint32_t qps, uint32_t burst) {
    KubeClientOptions options;
    options.qps = qps;
    options.burst = static_cast<int>(burst);
    return options;
  }
};

/// What one request came to after its retries: the last response the server gave.
struct KubeResponse {
  int status = 0;
  std::string body;
  int attempts = 0;
  bool ok() const { return status >= 200 && status < 300; }
};

class KubeClient {
 public:
  using Clock = std::chrono::steady_clock;
  /// Blocks until `until`; false when the wait was cut short (the agent is stopping).
  using Wait = std::function<bool(Clock::time_point until)>;

  static Result<std::unique_ptr<KubeClient>> create(const ClusterConfig& config,
                                                    KubeClientOptions options, Wait wait);

  /// Sends the request, retrying 429 (after at least its Retry-After), 5xx and transport errors
  /// with backoff up to maxAttempts. Any other status is returned as is, for the caller to judge
  /// (404, 409, 422 mean something to it). kUnavailable when the last attempt got no answer or
  /// the wait was cut short; kInvalidArgument, kIo when the token cannot be read.
  Result<KubeResponse> send(const ApiRequest& request);

  /// Sends a request whose body streams (a watch) after the rate limiter, once: a 2xx body goes to
  /// `onData` as it arrives (HttpsTransport::stream). Not retried here: a watch is resumed by its
  /// informer, from where it was. Returns the answer (the body of a non-2xx one); kUnavailable
  /// when no body came to its end (cancelStreams() and a stop during the wait included),
  /// kInvalidArgument or kIo when the token cannot be read.
  Result<ApiResponse> stream(const ApiRequest& request, std::chrono::milliseconds idleTimeout,
                             const std::function<bool(std::string_view)>& onData);
  /// Ends the stream() in progress, from any thread, and every later one: shutdown.
  void cancelStreams();

  /// The client's figures for /metrics: read from any thread while the client works.
  void writeMetrics(prometheus::TextWriter& out) const;
  const ClusterConfig& config() const { return config_; }

 private:
  KubeClient(ClusterConfig config, KubeClientOptions options, Wait wait,
             std::unique_ptr<HttpsTransport> transport);

  ClusterConfig config_;
  KubeClientOptions options_;
  Wait wait_;
  std::unique_ptr<HttpsTransport> transport_;
  BearerToken token_;
  RateLimiter limiter_;
  std::mt19937_64 random_;
  Backoff backoff_;
  std::atomic<uint64_t> requests_{0};  // attempts sent
  std::atomic<uint64_t> retries_{0};
  std::atomic<uint64_t> answered_{0};      // attempts that got an HTTP answer
  std::atomic<uint64_t> latencyNanos_{0};  // their summed latency
  std::atomic<uint64_t> lastLatencyNanos_{0};
};

/// True for the answers worth trying again: 429, 5xx.
bool isRetryableStatus(int status);

/// "HTTP 403: pods is forbidden: ..." from an error answer (a Status, or anything), its message
/// quoted and cut.
std::string describeAnswer(int status, std::string_view body);
/// kUnavailable `<what>: HTTP 409: "..."`: an answer the caller cannot use.
Error answerError(std::string_view what, const KubeResponse& response);

}  // namespace hostport::kube
