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

Result<KubeResponse> KubeClient::send(const ApiRequest& request) {
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
    requests_.fetch_add(1, std::memory_order_relaxed);
    std::optional<std::chrono::seconds> retryAfter;
    if (answered) {
      const auto took = static_cast<uint64_t>(
          std::chrono::duration_cast<std::chrono::nanoseconds>(Clock::now() - started).count());
      answered_.fetch_add(1, std::memory_order_relaxed);
      latencyNanos_.fetch_add(took, std::memory_order_relaxed);
      lastLatencyNanos_.store(took, std::memory_order_relaxed);
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
    retries_.fetch_add(1, std::memory_order_relaxed);
    if (!wait_(Clock::now() + backoff_.delay(attempt, retryAfter))) break;
  }
  if (lastError) return std::unexpected(std::move(*lastError));
  return last;
}

std::string KubeClient::metricsText() const {
  const auto seconds = [](uint64_t nanos) {
    return std::to_string(static_cast<double>(nanos) / 1e9);
  };
  std::string out;
  out += "# HELP hostport_kube_requests_total API server requests sent (attempts).\n";
  out += "# TYPE hostport_kube_requests_total counter\n";
  out += "hostport_kube_requests_total " + std::to_string(requests_.load()) + "\n";
  out +=
      "# HELP hostport_kube_retries_total API server requests sent again after 429, 5xx or no "
      "answer.\n";
  out += "# TYPE hostport_kube_retries_total counter\n";
  out += "hostport_kube_retries_total " + std::to_string(retries_.load()) + "\n";
  out += "# HELP hostport_kube_request_duration_seconds Time to the API server's answer.\n";
  out += "# TYPE hostport_kube_request_duration_seconds summary\n";
  out += "hostport_kube_request_duration_seconds_sum " + seconds(latencyNanos_.load()) + "\n";
  out += "hostport_kube_request_duration_seconds_count " + std::to_string(answered_.load()) + "\n";
  out += "# HELP hostport_kube_last_request_duration_seconds The last answer's time.\n";
  out += "# TYPE hostport_kube_last_request_duration_seconds gauge\n";
  out += "hostport_kube_last_request_duration_seconds " + seconds(lastLatencyNanos_.load()) + "\n";
  return out;
}

}  // namespace hostport::agent::kube
