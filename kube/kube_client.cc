#include "kube/kube_client.h"

#include <nlohmann/json.hpp>

#include "common/quote.h"

namespace hostport::kube {

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

Result<ApiResponse> KubeClient::stream(const ApiRequest& request,
                                       std::chrono::milliseconds idleTimeout,
                                       const std::function<bool(std::string_view)>& onData) {
  if (!wait_(limiter_.reserve(Clock::now()))) {
    return fail(ErrorCode::kUnavailable,
                "stopping: " + request.method + " " + request.target + " not sent");
  }
  HOSTPORT_TRY(const std::string token, token_.current());
  requests_.fetch_add(1, std::memory_order_relaxed);
  return transport_->stream(request, token, options_.timeout, idleTimeout, onData);
}

void KubeClient::cancelStreams() { transport_->cancel(); }

void KubeClient::writeMetrics(prometheus::TextWriter& out) const {
  using prometheus::Type;
  const auto seconds = [](uint64_t nanos) { return static_cast<double>(nanos) / 1e9; };
  out.family("hostport_kube_requests_total", Type::kCounter,
             "API server requests sent (attempts).");
  out.sample("hostport_kube_requests_total", uint64_t{requests_.load()});
  out.family("hostport_kube_retries_total", Type::kCounter,
             "API server requests sent again after 429, 5xx or no answer.");
  out.sample("hostport_kube_retries_total", uint64_t{retries_.load()});
  out.family("hostport_kube_request_duration_seconds", Type::kSummary,
             "Time to the API server's answer.");
  out.sample("hostport_kube_request_duration_seconds_sum", seconds(latencyNanos_.load()));
  out.sample("hostport_kube_request_duration_seconds_count", uint64_t{answered_.load()});
  out.family("hostport_kube_last_request_duration_seconds", Type::kGauge,
             "The last answer's time.");
  out.sample("hostport_kube_last_request_duration_seconds", seconds(lastLatencyNanos_.load()));
}

std::string describeAnswer(int status, std::string_view body) {
  std::string text = "HTTP " + std::to_string(status);
  const auto parsed = nlohmann::json::parse(body, nullptr, false);
  if (parsed.is_object() && parsed.contains("message") && parsed["message"].is_string()) {
    text += ": " + quoteText(parsed["message"].get<std::string>());
  }
  return text;
}

Error answerError(std::string_view what, const KubeResponse& response) {
  return Error{ErrorCode::kUnavailable,
               std::string(what) + ": " + describeAnswer(response.status, response.body),
               {},
               {}};
}

}  // namespace hostport::kube
