#include "agent/config/command_line.h"

#include <variant>

#include "agent/config/settings.h"

namespace hostport::agent::config {
namespace {

/// The row's help, with its default (read from `defaults`) and its file key.
std::string helpOf(const Setting& setting, const AgentConfig& defaults) {
  const std::string current = settingText(setting, defaults);
  return std::string(setting.help) + " (default " + (current.empty() ? "\"\"" : current) +
         "; file key " + std::string(setting.key) + ")";
}

/// How --help names a row's value.
std::string valueName(const Setting& setting) {
  if (std::holds_alternative<ChainChoice>(setting.value)) return "auto|true|false";
  if (std::holds_alternative<Text>(setting.value)) return "TEXT";
  return "N";
}

}  // namespace

void registerFlags(CLI::App& app, CommandLine& commandLine) {
  app.add_option("-c,--config", commandLine.configPath, "YAML config file (see docs/design.md)");
  app.add_option("--port-range,--hostport-range", commandLine.portRange,
                 "ranges of the default pool, e.g. 30000-32767 or 20000-20999,22000-22999 "
                 "(default " +
                     std::string(kDefaultPortRange) + ")");
  const AgentConfig defaults;
  for (const Setting& setting : settings()) {
    // A std::map's values stay where they are as it grows: CLI11 keeps a reference to each.
    std::optional<std::string>& slot = commandLine.settings[std::string(setting.key)];
    CLI::Option* option =
        app.add_option(std::string(setting.flag), slot, helpOf(setting, defaults));
    if (std::holds_alternative<Switch>(setting.value)) {
      // Alone, the flag is its default_str: "true".
      option->expected(0, 1)->default_str("true")->option_text("[=true|false]");
    } else {
      option->type_name(valueName(setting));
    }
  }
}

}  // namespace hostport::agent::config
