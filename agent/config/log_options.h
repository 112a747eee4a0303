#pragma once
// How the agent logs: first as the flags alone say (so that the errors of reading the file are
// logged the way the operator asked), then as the resolved configuration says.

#include "agent/config/agent_config.h"
#include "agent/log/event_log.h"

namespace hostport::agent::config {

/// --log-format, when given and valid; the defaults otherwise.
log::Options flagLogOptions(const CommandLine& commandLine);

/// logLevel and logFormat of a finalized `config` (finalizeConfig() checked both).
log::Options logOptions(const AgentConfig& config);

}  // namespace hostport::agent::config
