#include "agent/config/log_options.h"

namespace hostport::agent::config {

log::Options flagLogOptions(const CommandLine& commandLine) {
  log::Options options;
  const auto format = commandLine.settings.find("logFormat");
  if (format == commandLine.settings.end() || !format->second) return options;
  if (auto parsed = log::parseFormat(*format->second)) options.format = *parsed;
  return options;
}

log::Options logOptions(const AgentConfig& config) {
  return {.level = *log::parseLevel(config.logLevel),
          .format = *log::parseFormat(config.logFormat),
          .sink = {}};
}

}  // namespace hostport::agent::config
