#pragma once
// A settings table (setting.h) as command-line flags: one per row, with the row's help, its
// default read from a default-constructed Config, and its file key. Values are kept as text and
// applied with applySetting(), the way a file's are, so a flag and a key refuse the same values
// with the same words.

#include <CLI/CLI.hpp>
#include <span>
#include <string>
#include <variant>

#include "settings/setting.h"

namespace hostport::settings {

/// Whether --help names each row's key in a file (a program with a file of its own settings).
enum class FileKeys { kShown, kHidden };

/// Registers a flag for each row of `table` on `app`, writing what the command line gives into
/// `values`. Booleans are one flag: alone it means true, `--flag=false` says false.
template <typename Config>
void registerFlags(CLI::App& app, std::span<const Setting<Config>> table, FlagValues& values,
                   FileKeys fileKeys = FileKeys::kShown) {
  const Config defaults{};
  for (const Setting<Config>& setting : table) {
    const std::string current = settingText(setting, defaults);
    const std::string help =
        std::string(setting.help) + " (default " + (current.empty() ? "\"\"" : current) +
        (fileKeys == FileKeys::kShown ? "; file key " + std::string(setting.key) : "") + ")";
    // A std::map's values stay where they are as it grows: CLI11 keeps a reference to each.
    std::optional<std::string>& slot = values[std::string(setting.key)];
    CLI::Option* option = app.add_option(std::string(setting.flag), slot, help);
    if (std::holds_alternative<Switch<Config>>(setting.value)) {
      // Alone, the flag is its default_str: "true".
      option->expected(0, 1)->default_str("true")->option_text("[=true|false]");
    } else if (const auto* choice = std::get_if<Choice<Config>>(&setting.value)) {
      std::string words;
      for (const std::string_view word : choice->words) {
        words += (words.empty() ? "" : "|") + std::string(word);
      }
      option->type_name(words);
    } else if (std::holds_alternative<Text<Config>>(setting.value)) {
      option->type_name("TEXT");
    } else {
      option->type_name("N");
    }
  }
}

}  // namespace hostport::settings
