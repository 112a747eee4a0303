#include "common/quote.h"

#include <nlohmann/json.hpp>

namespace hostport {

std::string quoteText(std::string_view text, std::size_t maxBytes) {
  const bool cut = text.size() > maxBytes;
  // ASCII-only escaping with U+FFFD for broken UTF-8, so a value cut mid-character still prints.
  std::string result =
      nlohmann::json(std::string(text.substr(0, maxBytes)))
          .dump(-1, ' ', /*ensure_ascii=*/true, nlohmann::json::error_handler_t::replace);
  // JSON leaves DEL unescaped; it is the one control character that would reach a log raw.
  for (std::size_t at = result.find('\x7f'); at != std::string::npos;
       at = result.find('\x7f', at)) {
    result.replace(at, 1, "\\u007f");
  }
  return cut ? result + "..." : result;
}

}  // namespace hostport
