#include "settings/setting.h"

#include <algorithm>
#include <charconv>

#include "common/ascii.h"

namespace hostport::settings {

Result<uint64_t> parseWholeNumber(std::string_view text, std::string_view where, uint64_t min,
                                  uint64_t max) {
  const auto refuse = [&](const std::string& problem) {
    return fail(ErrorCode::kInvalidArgument,
                std::string(where) + ": " + quoteText(text) + " " + problem);
  };
  // At most 15 digits: nothing here counts that high, and the value cannot overflow.
  uint64_t value = 0;
  if (text.empty() || text.size() > 15 || !std::ranges::all_of(text, ascii::isDigit)) {
    return refuse("is not a whole number");
  }
  std::from_chars(text.data(), text.data() + text.size(), value);
  if (value < min) return refuse("is below " + std::to_string(min));
  if (value > max) return refuse("is above " + std::to_string(max));
  return value;
}

std::string wordList(std::span<const std::string_view> words) {
  std::string list;
  for (std::size_t i = 0; i < words.size(); ++i) {
    if (i > 0) list += i + 1 == words.size() ? " or " : ", ";
    list += words[i];
  }
  return list;
}

}  // namespace hostport::settings
