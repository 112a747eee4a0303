#include "admission/webhook_routes.h"

#include <array>
#include <chrono>

#include "admission/admission_review.h"
#include "admission/pod_claims.h"
#include "admission/pod_validation.h"
#include "agent/log/event_log.h"

namespace hostport::admission {
namespace {

namespace log = agent::log;
using agent::server::HttpRequest;
using agent::server::PathParams;
using agent::server::Responder;
using Clock = std::chrono::steady_clock;

constexpr std::string_view kJson = "application/json";

/// admission.refused at info (what a user was told), admission.review at debug (every answer).
void logAnswer(Webhook webhook, const AdmissionRequest& review, const AdmissionResponse& answer) {
  constexpr std::array<std::string_view, 3> kNames = {"validate", "mutate", "claim"};
  const std::string_view name = kNames[static_cast<std::size_t>(webhook)];
  if (!answer.allowed) {
    log::event(log::Component::kAdmission, log::Level::kInfo, "admission.refused",
               {{"webhook", name},
                log::untrusted("namespace", review.namespaceName),
                log::untrusted("name", review.name),
                log::untrusted("uid", review.uid),
                {"code", answer.code},
                log::untrusted("message", answer.message)});
    return;
  }
  if (!log::enabled(log::Component::kAdmission, log::Level::kDebug)) return;
  log::event(log::Component::kAdmission, log::Level::kDebug, "admission.review",
             {{"webhook", name},
              log::untrusted("namespace", review.namespaceName),
              log::untrusted("name", review.name),
              log::untrusted("uid", review.uid),
              {"patch_ops", answer.patch.size()},
              {"warnings", answer.warnings.size()},
              {"dry_run", review.dryRun}});
}

template <typename Decide>
agent::server::Router::Handler reviewHandler(Webhook webhook, const Webhooks& webhooks,
                                             Decide decide) {
  return [webhook, &webhooks, decide](const HttpRequest& request, const PathParams&,
                                      Responder respond) {
    const auto started = Clock::now();
    auto review = decodeAdmissionReview(request.body);
    if (!review) {
      webhooks.metrics.review(webhook, Outcome::kBadRequest, Clock::now() - started);
      respond(agent::server::errorResponse(400, "bad_request", review.error().message));
      return;
    }
    const AdmissionResponse answer = decide(*review);
    std::string body = encodeAdmissionReview(answer);
    const Outcome outcome = !answer.allowed        ? Outcome::kRefused
                            : answer.patch.empty() ? Outcome::kAllowed
                                                   : Outcome::kPatched;
    webhooks.metrics.review(webhook, outcome, Clock::now() - started);
    logAnswer(webhook, *review, answer);
    respond({200, std::string(kJson), std::move(body)});
  };
}

}  // namespace

void addWebhookRoutes(agent::server::Router& router, const Webhooks& webhooks) {
  router.add("POST", "/validate",
             reviewHandler(Webhook::kValidate, webhooks, [&webhooks](const AdmissionRequest& r) {
               return validatePod(r, webhooks.judge);
             }));
  router.add("POST", "/mutate",
             reviewHandler(Webhook::kMutate, webhooks, [&webhooks](const AdmissionRequest& r) {
               return mutatePod(r, webhooks.judge, webhooks.mutation);
             }));
  if (webhooks.claimer != nullptr) {
    router.add("POST", "/claim",
               reviewHandler(Webhook::kClaim, webhooks, [&webhooks](const AdmissionRequest& r) {
                 return claimPodPorts(r, *webhooks.claimer, webhooks.judge, webhooks.holderToken);
               }));
  }
  // The server listens only once it has its certificate and pools, so being up is being ready.
  for (const std::string_view path : {"/healthz", "/readyz"}) {
    router.add("GET", path, [](const HttpRequest&, const PathParams&, Responder respond) {
      respond({200, "text/plain", "ok\n"});
    });
  }
}

}  // namespace hostport::admission
