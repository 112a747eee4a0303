#pragma once
// The webhook server's routes: POST /validate, POST /mutate and, with cluster pools, POST /claim
// (an AdmissionReview in, one out), GET /healthz and GET /readyz. Everything else is the router's
// 404 or 405.

#include "admission/pod_claims.h"
#include "admission/pod_mutation.h"
#include "admission/webhook_metrics.h"
#include "agent/core/allocator.h"
#include "agent/server/router.h"

namespace hostport::admission {

/// What the handlers decide with; it outlives the router.
struct Webhooks {
  const agent::core::Allocator& judge;  // const calls only: safe from every serving thread
  MutationOptions mutation;
  WebhookMetrics& metrics;
  ClusterClaimer* claimer = nullptr;  // null: no cluster pool, no /claim
  HolderToken holderToken;
};

void addWebhookRoutes(agent::server::Router& router, const Webhooks& webhooks);

}  // namespace hostport::admission
