#pragma once
// The kubelet's exec probes of the agent (hostportctl health, hostportctl ready): one GET of
// /healthz or /readyz on the control socket within the client's deadline. A probe passes on 200
// only; anything else is one line of reason, which the kubelet records in the pod's events.

#include <string_view>

#include "agent/api/agent_client.h"
#include "common/error.h"

namespace hostport::agent::api {

/// Success when GET `target` answers 200. kUnavailable, as the client words it, when the agent
/// cannot be reached in time; kConflict ("GET /readyz answered 503: not ready") for any other
/// answer, its body cut to one quoted line.
Result<void> probeAgent(const AgentClient& client, std::string_view target);

}  // namespace hostport::agent::api
