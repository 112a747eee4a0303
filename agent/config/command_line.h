#pragma once
// hostport-agent's flags: --config and --port-range, and one flag per row of the settings table
// (settings.h), each with the row's help and its default read from a default AgentConfig. Values
// are kept as text and parsed by resolveConfig() the way the file's are, so a flag and a key
// refuse the same values with the same words.

#include <CLI/CLI.hpp>

#include "agent/config/agent_config.h"

namespace hostport::agent::config {

/// Registers every flag on `app`, writing what the command line gives into `commandLine`.
/// Booleans are one flag: alone it means true, `--flag=false` says false.
void registerFlags(CLI::App& app, CommandLine& commandLine);

}  // namespace hostport::agent::config
