#pragma once
// A table of settings, one row each: its YAML key, its flag, what it means, the member of the
// program's config struct it sets with the member's type and bounds, and whether a reload may
// change it. Whatever reads settings walks the table (Kea's simple_parser4.cc shape): a file's
// keys, the flags and --help (flags.h registers them; applyFlags() applies what they gave), a
// reload's diff. The agent's table is agent/config/settings.cc, the admission server's
// admission/admission_config.cc. The default of a row is its member's initializer, printed from a
// default-constructed config, so it is written once.

#include <cstdint>
#include <map>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <variant>

#include "common/error.h"
#include "common/quote.h"

namespace hostport::settings {

/// Whether a changed value takes effect at a reload or waits for a restart.
enum class Reload { kRestart, kLive };

/// Free text (paths, names, addresses): the program judges what it must be once all are read.
template <typename Config>
struct Text {
  std::string Config::*member;
};
/// true or false, in every source alike; a flag alone means true.
template <typename Config>
struct Switch {
  bool Config::*member;
};
/// A whole number in [min, max], in decimal digits.
template <typename Config>
struct Count32 {
  uint32_t Config::*member;
  uint32_t min;
  uint32_t max;
};
template <typename Config>
struct Count64 {
  uint64_t Config::*member;
  uint64_t min;
  uint64_t max;
};
/// One word of a few (`words`, e.g. auto, true, false), kept in the config as the program's own
/// type: `set` stores a word already checked to be one of them, `get` gives the current one.
template <typename Config>
struct Choice {
  std::span<const std::string_view> words;
  void (*set)(std::string_view word, Config& config);
  std::string_view (*get)(const Config& config);
};

template <typename Config>
using Value =
    std::variant<Text<Config>, Switch<Config>, Count32<Config>, Count64<Config>, Choice<Config>>;

template <typename Config>
struct Setting {
  std::string_view key;   // in the YAML file: "tableRepairSeconds"
  std::string_view flag;  // "--table-repair-interval"; CLI11's form, aliases after a comma
  std::string_view help;  // for --help, without the default (printed from a default Config)
  Value<Config> value;
  Reload reload = Reload::kRestart;

  /// The first name of `flag`: "--port-range" of "--port-range,--hostport-range".
  std::string_view flagName() const { return flag.substr(0, flag.find(',')); }
};

/// What the command line gave, by the row's key: "" is a value too (--metrics-address ""
/// turns the listener off). A row not here, or here without a value, keeps what it had.
using FlagValues = std::map<std::string, std::optional<std::string>, std::less<>>;

/// A whole number in [min, max] written in decimal digits; "<where>: <problem>" otherwise.
Result<uint64_t> parseWholeNumber(std::string_view text, std::string_view where, uint64_t min,
                                  uint64_t max);

/// "auto, true or false".
std::string wordList(std::span<const std::string_view> words);

/// The row of key `key` in `table`; nullptr for none.
template <typename Config>
const Setting<Config>* findSetting(std::span<const Setting<Config>> table, std::string_view key) {
  for (const auto& setting : table) {
    if (setting.key == key) return &setting;
  }
  return nullptr;
}

/// Sets the row's member from `text`, as a file or a flag gives it. kInvalidArgument is
/// "<where>: <problem>", the problem quoting the text: `--chain-cni: "maybe" is not auto, true or
/// false`.
template <typename Config>
Result<void> applySetting(const Setting<Config>& setting, std::string_view text,
                          std::string_view where, Config& config) {
  const auto refuse = [&](const std::string& problem) {
    return fail(ErrorCode::kInvalidArgument,
                std::string(where) + ": " + quoteText(text) + " " + problem);
  };
  struct Apply {
    std::string_view text;
    std::string_view where;
    Config& config;
    decltype(refuse)& refused;

    Result<void> operator()(const Text<Config>& value) const {
      config.*value.member = std::string(text);
      return {};
    }
    Result<void> operator()(const Switch<Config>& value) const {
      if (text != "true" && text != "false") return refused("is not true or false");
      config.*value.member = text == "true";
      return {};
    }
    Result<void> operator()(const Count32<Config>& value) const {
      HOSTPORT_TRY(const uint64_t count, parseWholeNumber(text, where, value.min, value.max));
      config.*value.member = static_cast<uint32_t>(count);
      return {};
    }
    Result<void> operator()(const Count64<Config>& value) const {
      HOSTPORT_TRY(config.*value.member, parseWholeNumber(text, where, value.min, value.max));
      return {};
    }
    Result<void> operator()(const Choice<Config>& value) const {
      for (const std::string_view word : value.words) {
        if (text == word) {
          value.set(word, config);
          return {};
        }
      }
      return refused("is not " + wordList(value.words));
    }
  };
  return std::visit(Apply{text, where, config, refuse}, setting.value);
}

/// The row's value in `config`, as a file or a flag would give it ("30", "true", "auto").
template <typename Config>
std::string settingText(const Setting<Config>& setting, const Config& config) {
  struct Print {
    const Config& config;
    std::string operator()(const Text<Config>& value) const { return config.*value.member; }
    std::string operator()(const Switch<Config>& value) const {
      return config.*value.member ? "true" : "false";
    }
    std::string operator()(const Count32<Config>& value) const {
      return std::to_string(config.*value.member);
    }
    std::string operator()(const Count64<Config>& value) const {
      return std::to_string(config.*value.member);
    }
    std::string operator()(const Choice<Config>& value) const {
      return std::string(value.get(config));
    }
  };
  return std::visit(Print{config}, setting.value);
}

/// Applies each value the command line gave over `config`; errors name the flag.
template <typename Config>
Result<void> applyFlags(std::span<const Setting<Config>> table, const FlagValues& values,
                        Config& config) {
  for (const auto& [key, text] : values) {
    if (!text) continue;
    const Setting<Config>* setting = findSetting(table, key);
    if (setting == nullptr) {
      return fail(ErrorCode::kInternal, "no setting " + quoteText(key) + " for a flag");
    }
    HOSTPORT_TRY_VOID(applySetting(*setting, *text, setting->flagName(), config));
  }
  return {};
}

}  // namespace hostport::settings
