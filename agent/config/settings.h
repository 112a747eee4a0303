#pragma once
// Every scalar setting of the agent, one row each (settings.cc): its YAML key, its flag, what it
// means, the AgentConfig member it sets with the member's type and bounds, and whether a reload
// may change it. The YAML reader, the flags, --help, the flags' merge over the file and the
// reload's diff all walk this table (Kea's simple_parser4.cc shape), so a new setting is a member
// with its default and one row. The default is the member's initializer: --help prints it from a
// default AgentConfig, so it is written once. The pools, a mapping, are read apart
// (agent_config.cc).

#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <variant>

#include "agent/config/agent_config.h"
#include "common/error.h"

namespace hostport::agent::config {

/// Whether a changed value takes effect at a reload or waits for a restart (config_reload.h).
enum class Reload { kRestart, kLive };

/// Free text (paths, names, addresses): finalizeConfig judges what it must be.
struct Text {
  std::string AgentConfig::*member;
};
/// true or false, in every source alike; a flag alone means true.
struct Switch {
  bool AgentConfig::*member;
};
/// A whole number in [min, max], in decimal digits.
struct Count32 {
  uint32_t AgentConfig::*member;
  uint32_t min;
  uint32_t max;
};
struct Count64 {
  uint64_t AgentConfig::*member;
  uint64_t min;
  uint64_t max;
};
/// auto, true or false (ChainCni).
struct ChainChoice {
  ChainCni AgentConfig::*member;
};
using SettingValue = std::variant<Text, Switch, Count32, Count64, ChainChoice>;

struct Setting {
  std::string_view key;   // in the YAML file: "tableRepairSeconds"
  std::string_view flag;  // "--table-repair-interval"; CLI11's form, aliases after a comma
  std::string_view help;  // for --help, without the default (printed from AgentConfig{})
  SettingValue value;
  Reload reload = Reload::kRestart;

  /// The first name of `flag`: "--port-range" of "--port-range,--hostport-range".
  std::string_view flagName() const { return flag.substr(0, flag.find(',')); }
};

/// The table, in the order --help lists it.
std::span<const Setting> settings();
/// The row of YAML key `key`; nullptr for none.
const Setting* findSetting(std::string_view key);

/// Sets the row's member from `text`, as the file or a flag gives it. kInvalidArgument is
/// "<where>: <problem>", the problem quoting the text: `--chain-cni: "maybe" is not auto, true or
/// false`.
Result<void> applySetting(const Setting& setting, std::string_view text, std::string_view where,
                          AgentConfig& config);
/// A whole number in [min, max] written in decimal digits; "<where>: <problem>" otherwise.
Result<uint64_t> parseWholeNumber(std::string_view text, std::string_view where, uint64_t min,
                                  uint64_t max);
/// The row's value in `config`, as a file or a flag would give it ("30", "true", "auto").
std::string settingText(const Setting& setting, const AgentConfig& config);

}  // namespace hostport::agent::config
