#include "admission/webhook_metrics.h"

namespace hostport::admission {
namespace {

constexpr std::array<std::string_view, 3> kWebhookNames = {"validate", "mutate", "claim"};
constexpr std::array<std::string_view, 4> kOutcomeNames = {"allowed", "patched", "refused",
                                                           "bad_request"};

}  // namespace

void WebhookMetrics::review(Webhook webhook, Outcome outcome, std::chrono::nanoseconds took) {
  const auto w = static_cast<std::size_t>(webhook);
  reviews_[w][static_cast<std::size_t>(outcome)].fetch_add(1, std::memory_order_relaxed);
  latency_[w].observe(took);
}

void WebhookMetrics::certificate(std::chrono::system_clock::time_point notAfter) {
  certificateNotAfter_.store(
      std::chrono::duration_cast<std::chrono::seconds>(notAfter.time_since_epoch()).count());
}

void WebhookMetrics::renewed() { renewals_.fetch_add(1, std::memory_order_relaxed); }

void WebhookMetrics::certificateFailure() {
  certificateFailures_.fetch_add(1, std::memory_order_relaxed);
}

void WebhookMetrics::write(prometheus::TextWriter& out) const {
  out.family("hostport_admission_reviews_total", prometheus::Type::kCounter,
             "AdmissionReviews answered, by webhook and outcome");
  for (std::size_t w = 0; w < kWebhooks; ++w) {
    for (std::size_t o = 0; o < kOutcomes; ++o) {
      out.sample("hostport_admission_reviews_total", reviews_[w][o].load(),
                 {{"webhook", kWebhookNames[w]}, {"outcome", kOutcomeNames[o]}});
    }
  }
  out.family("hostport_admission_review_seconds", prometheus::Type::kHistogram,
             "Time from a review's body read to its answer ready, in the server");
  for (std::size_t w = 0; w < kWebhooks; ++w) {
    latency_[w].write(out, "hostport_admission_review_seconds", {{"webhook", kWebhookNames[w]}});
  }
  out.family("hostport_admission_certificate_not_after_seconds", prometheus::Type::kGauge,
             "When the serving certificate ends, in seconds since the epoch; 0 before the first");
  out.sample("hostport_admission_certificate_not_after_seconds",
             static_cast<double>(certificateNotAfter_.load()));
  out.family("hostport_admission_certificate_renewals_total", prometheus::Type::kCounter,
             "Serving certificates this replica made and stored");
  out.sample("hostport_admission_certificate_renewals_total", renewals_.load());
  out.family("hostport_admission_certificate_failures_total", prometheus::Type::kCounter,
             "Certificate passes that failed (the API server unreachable, a refused write)");
  out.sample("hostport_admission_certificate_failures_total", certificateFailures_.load());
}

}  // namespace hostport::admission
