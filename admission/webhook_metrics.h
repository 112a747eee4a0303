#pragma once
// What hostport-admission counts, for GET /metrics: reviews per webhook and outcome with their
// handling time, and the certificates it serves. Written from the serving threads and the
// keeper's, read by the metrics listener: atomics only.

#include <array>
#include <atomic>
#include <chrono>
#include <cstdint>

#include "common/duration_histogram.h"
#include "common/prometheus_text.h"

namespace hostport::admission {

enum class Webhook : uint8_t { kValidate, kMutate, kClaim };
enum class Outcome : uint8_t {
  kAllowed,     // validate: allowed; mutate, claim: allowed with no patch
  kPatched,     // mutate, claim: allowed with a patch
  kRefused,     // validate, claim: refused
  kBadRequest,  // the body was not an AdmissionReview
};

class WebhookMetrics {
 public:
  void review(Webhook webhook, Outcome outcome, std::chrono::nanoseconds took);
  /// What the served certificate ends at, at each look.
  void certificate(std::chrono::system_clock::time_point notAfter);
  /// This replica made and stored a serving certificate.
  void renewed();
  void certificateFailure();

  void write(prometheus::TextWriter& out) const;

 private:
  static constexpr std::size_t kWebhooks = 3;
  static constexpr std::size_t kOutcomes = 4;
  // The handling time's bucket bounds in seconds: 50 µs to 100 ms.
  static constexpr std::array<double, 8> kBounds = {0.00005, 0.0001, 0.00025, 0.0005,
                                                    0.001,   0.0025, 0.01,    0.1};

  std::array<std::array<std::atomic<uint64_t>, kOutcomes>, kWebhooks> reviews_{};
  std::array<prometheus::DurationHistogram<kBounds.size()>, kWebhooks> latency_{
      prometheus::DurationHistogram<kBounds.size()>(kBounds),
      prometheus::DurationHistogram<kBounds.size()>(kBounds),
      prometheus::DurationHistogram<kBounds.size()>(kBounds)};
  std::atomic<int64_t> certificateNotAfter_{0};  // seconds since the epoch; 0: none yet
  std::atomic<uint64_t> renewals_{0};
  std::atomic<uint64_t> certificateFailures_{0};
};

}  // namespace hostport::admission
