#pragma once
// Untrusted text (CNI input, annotations, config files, requests, a process's comm) is echoed in
// error messages and logs through quoteText() only, so it can never forge a log line or run on for
// kilobytes. JSON values go through echo() (common/bounded_json.h), which quotes strings here.

#include <cstddef>
#include <string>
#include <string_view>

namespace hostport {

inline constexpr std::size_t kMaxEchoedBytes = 64;

/// JSON-quoted with ASCII escapes (quotes, backslashes, control characters and DEL escaped),
/// invalid UTF-8 replaced by U+FFFD, cut to `maxBytes` with "..." after the closing quote.
std::string quoteText(std::string_view text, std::size_t maxBytes = kMaxEchoedBytes);

}  // namespace hostport
