#include "agent/config/command_line.h"

#include "agent/config/settings.h"
#include "settings/flags.h"

namespace hostport::agent::config {

void registerFlags(CLI::App& app, CommandLine& commandLine) {
  app.add_option("-c,--config", commandLine.configPath, "YAML config file (see docs/design.md)");
  app.add_option("--port-range,--hostport-range", commandLine.portRange,
                 "ranges of the default pool, e.g. 30000-32767 or 20000-20999,22000-22999 "
                 "(default " +
                     std::string(kDefaultPortRange) + ")");
  settings::registerFlags(app, settings(), commandLine.settings);
}

}  // namespace hostport::agent::config
