#pragma once
// Every scalar setting of the agent, one row each of a settings table (settings/setting.h): its
// YAML key, its flag, what it means, the AgentConfig member it sets with the member's type and
// bounds, and whether a reload may change it. The YAML reader, the flags, --help, the flags' merge
// over the file and the reload's diff all walk this table, so a new setting is a member with its
// default and one row. The pools, a mapping, are read apart (agent_config.cc).

#include <span>
#include <string_view>

#include "agent/config/agent_config.h"
#include "settings/setting.h"

namespace hostport::agent::config {

using settings::Reload;
using Setting = settings::Setting<AgentConfig>;
using Text = settings::Text<AgentConfig>;
using Switch = settings::Switch<AgentConfig>;
using Count32 = settings::Count32<AgentConfig>;
using Count64 = settings::Count64<AgentConfig>;
using Choice = settings::Choice<AgentConfig>;

/// The table, in the order --help lists it.
std::span<const Setting> settings();
/// The row of YAML key `key`; nullptr for none.
const Setting* findSetting(std::string_view key);

using settings::applySetting;
using settings::parseWholeNumber;
using settings::settingText;

}  // namespace hostport::agent::config
