#include "agent/kube/kube_client.h"

namespace hostport::agent::kube {

bool isRetryableStatus(int status) { return status == 429 || (status >= 500 && status <= 599); }

KubeClient::KubeClient(ClusterConfig config, KubeClientOptions options, Wait wait,
                       std::unique_ptr<HttpsTransport> transport)
    : config_(std::move(config)),
      options_(options),
      wait_(std::move(wait)),
      transport_(std::move(transport)),
      token_(config_.credentials.tokenFile.empty()
                 ? BearerToken::fixed(config_.credentials.token)
                 : BearerToken::fromFile(config_.credentials.tokenFile)),
      limiter_(options.qps, options.burst, Clock::now()),
      random_(std::random_device{}()),
      backoff_(options.backoff,
               [this] { return std::uniform_real_distribution<double>(0.0, 1.0)(random_); }) {}

Result<std::unique_ptr<KubeClient>> KubeClient::create(const ClusterConfig& config,
                                                       KubeClientOptions options, Wait wait) {
  if (options.qps <= 0 || options.burst < 1 || options.maxAttempts < 1) {
    return fail(ErrorCode::kInvalidArgument,
                "the API client needs qps > 0, burst >= 1 and maxAttempts >= 1");
  }
  HOSTPORT_TRY(auto transport, HttpsTransport::create(config));
  return std::unique_ptr<KubeClient>(
      new KubeClient(config, options, std::move(wait), std::move(transport)));
}

Result<KubeResponse> KubeClient::send(const HttpRequest& request) {
  std::optional<Error> lastError;
  KubeResponse last;
  for (int attempt = 1; attempt <= options_.maxAttempts; ++attempt) {
    if (!wait_(limiter_.reserve(Clock::now()))) {
      return fail(ErrorCode::kUnavailable,
                  "stopping: " + request.method + " " + request.target + " not sent");
    }
    HOSTPORT_TRY(const std::string token, token_.current());
    const auto started = Clock::now();
    auto answered = transport_->exchange(request, token, options_.timeout);
    ++stats_.requests;
    std::optional<std::chrono::seconds> retryAfter;
    if (answered) {
      stats_.lastLatency = Clock::now() - started;
      last = KubeResponse{answered->status, std::move(answered->body), attempt};
      if (!isRetryableStatus(last.status)) return last;
      if (const auto header = answered->headers.find("retry-after");
          header != answered->headers.end()) {
        retryAfter = parseRetryAfter(header->second);
      }
      lastError.reset();
    } else {
      lastError = std::move(answered.error());
    }
    if (attempt == options_.maxAttempts) break;
    ++stats_.retries;
    if (!wait_(Clock::now() + backoff_.delay(attempt, retryAfter))) break;
  }
  if (lastError) return std::unexpected(std::move(*lastError));
  return last;
}

}  // namespace hostport::agent::kube
