#pragma once

#include <atomic>

#include "agent/server/router.h"
#include "agent/service/agent_service.h"

namespace hostport::agent::service {

/// Registers the control socket's endpoints (agent/api/routes.h) on `router`. `ready` turns
/// /readyz green once recovery is done and the socket is served.
void registerApiHandlers(server::Router& router, AgentService& service, Metrics& metrics,
                         const std::atomic<bool>& ready);

/// Registers GET /metrics (Prometheus text) alone: the whole router of the TCP metrics listener,
/// and the same handler registerApiHandlers() puts on the control socket.
void registerMetricsHandler(server::Router& router, AgentService& service);

}  // namespace hostport::agent::service
