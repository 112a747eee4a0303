// Every row of the settings table (agent/config/settings.h) is a key of the file, a flag, a line of
// --help and a name in the reload's diff. The tests walk the table, so a setting added as one row
// is covered by them with nothing else written.

#include "agent/config/settings.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <set>
#include <string>
#include <vector>

#include "agent/config/command_line.h"
#include "agent/config/config_reload.h"
#include "tests/support/result_assertions.h"

namespace hostport::agent::config {
namespace {

using ::testing::Contains;
using ::testing::HasSubstr;

/// A value the row accepts that is not its default, as the file or a flag would give it.
std::string otherValue(const Setting& setting) {
  const AgentConfig defaults;
  struct Other {
    const Setting& setting;
    const AgentConfig& defaults;
    std::string operator()(const Text&) const { return "/sample/" + std::string(setting.key); }
    std::string operator()(const Switch& value) const {
      return defaults.*value.member ? "false" : "true";
    }
    std::string operator()(const Count32& value) const {
      return std::to_string(defaults.*value.member == value.min ? value.max : value.min);
    }
    std::string operator()(const Count64& value) const {
      return std::to_string(defaults.*value.member == value.min ? value.max : value.min);
    }
    std::string operator()(const Choice& value) const {
      return std::string(value.get(defaults) == value.words.back() ? value.words.front()
                                                                   : value.words.back());
    }
  };
  return std::visit(Other{setting, defaults}, setting.value);
}

/// The command line `args` parsed as hostport-agent parses its own.
CommandLine parsed(std::vector<std::string> args) {
  CLI::App app;
  CommandLine commandLine;
  registerFlags(app, commandLine);
  args.insert(args.begin(), "hostport-agent");
  std::vector<char*> argv;
  for (auto& arg : args) argv.push_back(arg.data());
  app.parse(static_cast<int>(argv.size()), argv.data());
  return commandLine;
}

TEST(SettingsTest, KeysAndFlagsAreUnique) {
  std::set<std::string_view> keys;
  std::set<std::string_view> flags;
  for (const Setting& setting : settings()) {
    EXPECT_TRUE(keys.insert(setting.key).second) << setting.key;
    EXPECT_TRUE(flags.insert(setting.flagName()).second) << setting.flagName();
    EXPECT_TRUE(setting.flagName().starts_with("--")) << setting.flagName();
    EXPECT_FALSE(setting.help.empty()) << setting.key;
    EXPECT_EQ(findSetting(setting.key), &setting);
  }
  EXPECT_EQ(findSetting("pools"), nullptr) << "the pools are a mapping, read apart";
}

TEST(SettingsTest, EveryRowIsAKeyOfTheFile) {
  for (const Setting& setting : settings()) {
    const std::string value = otherValue(setting);
    AgentConfig config;
    ASSERT_OK(
        applyYamlConfig(std::string(setting.key) + ": \"" + value + "\"\n", "agent.yaml", config));
    EXPECT_EQ(settingText(setting, config), value) << setting.key;
  }
}

TEST(SettingsTest, EveryRowIsAFlagThatGoesOverTheFile) {
  for (const Setting& setting : settings()) {
    const std::string value = otherValue(setting);
    const CommandLine commandLine = parsed({std::string(setting.flagName()) + "=" + value});
    AgentConfig config;
    ASSERT_OK(applyCommandLine(commandLine, config));
    EXPECT_EQ(settingText(setting, config), value) << setting.flagName();
  }
}

TEST(SettingsTest, ABooleanFlagAloneMeansTrueAndTakesFalseTooButNothingElse) {
  for (const Setting& setting : settings()) {
    if (!std::holds_alternative<Switch>(setting.value)) continue;
    const std::string flag(setting.flagName());
    AgentConfig on;
    on.*std::get<Switch>(setting.value).member = false;
    ASSERT_OK(applyCommandLine(parsed({flag}), on));
    EXPECT_EQ(settingText(setting, on), "true") << flag;
    AgentConfig off;
    ASSERT_OK(applyCommandLine(parsed({flag + "=false"}), off));
    EXPECT_EQ(settingText(setting, off), "false") << flag;
    AgentConfig bad;
    const auto refused = applyCommandLine(parsed({flag + "=yes"}), bad);
    ASSERT_FALSE(refused.has_value()) << flag;
    EXPECT_EQ(refused.error().message, flag + ": \"yes\" is not true or false");
  }
}

TEST(SettingsTest, EveryRowIsInTheHelpWithItsDefaultAndItsKey) {
  CLI::App app("hostport-agent");
  CommandLine commandLine;
  registerFlags(app, commandLine);
  const std::string help = app.help();
  for (const Setting& setting : settings()) {
    EXPECT_THAT(help, HasSubstr(std::string(setting.flagName()))) << setting.key;
    EXPECT_THAT(help, HasSubstr("file key " + std::string(setting.key))) << setting.key;
  }
  EXPECT_THAT(help, HasSubstr("(default 30; file key tableRepairSeconds)"));
  EXPECT_THAT(help, HasSubstr("(default \"\"; file key kubeconfig)"));
}

TEST(SettingsTest, EveryRowThatNeedsARestartIsNamedByTheReloadsDiff) {
  for (const Setting& setting : settings()) {
    AgentConfig next;
    ASSERT_OK(applySetting(setting, otherValue(setting), "test", next));
    const ReloadPlan plan = planReload(AgentConfig{}, next);
    if (setting.reload == Reload::kRestart) {
      EXPECT_THAT(plan.needRestart, Contains(std::string(setting.key)));
    } else {
      EXPECT_TRUE(plan.needRestart.empty()) << setting.key;
    }
  }
}

TEST(SettingsTest, CountsAreWholeNumbersWithinTheirBoundsNamingWhere) {
  const Setting* repair = findSetting("tableRepairSeconds");
  ASSERT_NE(repair, nullptr);
  AgentConfig config;
  EXPECT_EQ(applySetting(*repair, "86401", "--table-repair-interval", config).error().message,
            "--table-repair-interval: \"86401\" is above 86400");
  EXPECT_EQ(applySetting(*repair, "-1", "agent.yaml: tableRepairSeconds", config).error().message,
            "agent.yaml: tableRepairSeconds: \"-1\" is not a whole number");
  const Setting* qps = findSetting("apiQps");
  ASSERT_NE(qps, nullptr);
  EXPECT_EQ(applySetting(*qps, "0", "--kube-api-qps", config).error().message,
            "--kube-api-qps: \"0\" is below 1");
}

}  // namespace
}  // namespace hostport::agent::config
