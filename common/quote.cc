#include "common/quote.h"

namespace hostport {

std::string quoteText(std::string_view text) {
  const bool cut = text.size() > kMaxEchoedBytes;
  // ASCII-only escaping with U+FFFD for broken UTF-8, so a value cut mid-character still prints.
  std::string result =
      nlohmann::json(std::string(text.substr(0, kMaxEchoedBytes)))
          .dump(-1, ' ', /*ensure_ascii=*/true, nlohmann::json::error_handler_t::replace);
  // JSON leaves DEL unescaped; it is the one control character that would reach a log raw.
  for (std::size_t at = result.find('\x7f'); at != std::string::npos;
       at = result.find('\x7f', at)) {
    result.replace(at, 1, "\\u007f");
  }
  return cut ? result + "..." : result;
}

std::string echo(const nlohmann::json& value) {
  if (value.is_object()) return "{...}";
  if (value.is_array()) return "[...]";
  if (value.is_string()) return quoteText(value.get_ref<const std::string&>());
  return value.dump();
}

}  // namespace hostport
