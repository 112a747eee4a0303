// A settings table over a config of its own: each kind of row read from text with the words a
// user sees, printed back, and given as flags.
#include "settings/setting.h"

#include <gtest/gtest.h>

#include <array>

#include "settings/flags.h"
#include "tests/support/result_assertions.h"

namespace hostport::settings {
namespace {

enum class Mode { kFast, kSafe };

struct SampleConfig {
  std::string path = "/var/lib/sample";
  bool verbose = false;
  uint32_t retries = 3;
  uint64_t bytes = 4096;
  Mode mode = Mode::kSafe;
};

constexpr std::array<std::string_view, 2> kModeWords = {"fast", "safe"};

// clang-format off
const std::array<Setting<SampleConfig>, 5> kTable = {{
  {"path", "--path", "where", Text<SampleConfig>{&SampleConfig::path}},
  {"verbose", "--verbose,-v", "say more", Switch<SampleConfig>{&SampleConfig::verbose}},
  {"retries", "--retries", "tries again", Count32<SampleConfig>{&SampleConfig::retries, 1, 10}},
  {"bytes", "--bytes", "at most", Count64<SampleConfig>{&SampleConfig::bytes, 0, 1 << 20}},
  {"mode", "--mode", "how",
   Choice<SampleConfig>{kModeWords,
                        [](std::string_view word, SampleConfig& config) {
                          config.mode = word == "fast" ? Mode::kFast : Mode::kSafe;
                        },
                        [](const SampleConfig& config) {
                          return config.mode == Mode::kFast ? kModeWords[0] : kModeWords[1];
                        }},
   Reload::kLive},
}};
// clang-format on

std::span<const Setting<SampleConfig>> table() { return kTable; }

std::string refusal(std::string_view key, std::string_view text) {
  SampleConfig config;
  auto applied = applySetting(*findSetting(table(), key), text, "sample.yaml: x", config);
  return applied ? "applied" : applied.error().message;
}

TEST(SettingTest, EachKindReadsItsTextAndPrintsItBack) {
  SampleConfig config;
  for (const auto& [key, text] : {std::pair{"path", "/tmp/x"},
                                  {"verbose", "true"},
                                  {"retries", "10"},
                                  {"bytes", "0"},
                                  {"mode", "fast"}}) {
    const auto* setting = findSetting(table(), key);
    ASSERT_NE(setting, nullptr) << key;
    ASSERT_OK(applySetting(*setting, text, key, config));
    EXPECT_EQ(settingText(*setting, config), text);
  }
  EXPECT_EQ(config.mode, Mode::kFast);
  EXPECT_EQ(findSetting(table(), "nope"), nullptr);
}

TEST(SettingTest, RefusesWithTheWhereAndTheQuotedText) {
  EXPECT_EQ(refusal("verbose", "yes"), "sample.yaml: x: \"yes\" is not true or false");
  EXPECT_EQ(refusal("retries", "0"), "sample.yaml: x: \"0\" is below 1");
  EXPECT_EQ(refusal("retries", "11"), "sample.yaml: x: \"11\" is above 10");
  EXPECT_EQ(refusal("retries", "-1"), "sample.yaml: x: \"-1\" is not a whole number");
  EXPECT_EQ(refusal("bytes", "1e3"), "sample.yaml: x: \"1e3\" is not a whole number");
  EXPECT_EQ(refusal("mode", "slow"), "sample.yaml: x: \"slow\" is not fast or safe");
}

TEST(SettingTest, ListsWordsAsASentence) {
  const std::array<std::string_view, 3> three = {"auto", "true", "false"};
  EXPECT_EQ(wordList(three), "auto, true or false");
  EXPECT_EQ(wordList(std::span(three).first(1)), "auto");
}

TEST(SettingTest, FlagsSetWhatTheyGiveAndNameTheFlagWhenRefused) {
  CLI::App app;
  FlagValues values;
  registerFlags(app, table(), values);
  std::vector<std::string> args = {"sample", "-v", "--mode", "fast", "--path", ""};
  std::vector<char*> argv;
  for (auto& arg : args) argv.push_back(arg.data());
  app.parse(static_cast<int>(argv.size()), argv.data());
  SampleConfig config;
  ASSERT_OK(applyFlags(table(), values, config));
  EXPECT_TRUE(config.verbose);
  EXPECT_EQ(config.mode, Mode::kFast);
  EXPECT_EQ(config.path, "");
  EXPECT_EQ(config.retries, 3u) << "a flag not given keeps what the config had";

  values["retries"] = "99";
  EXPECT_EQ(applyFlags(table(), values, config).error().message, "--retries: \"99\" is above 10");
  const std::string help = app.help();
  EXPECT_NE(help.find("how (default safe; file key mode)"), std::string::npos) << help;
  EXPECT_NE(help.find("fast|safe"), std::string::npos) << help;
}

}  // namespace
}  // namespace hostport::settings
