#pragma once
// Untrusted text (CNI input, annotations, config files, requests) is echoed in error messages
// through these two functions only, so it can never forge a log line or run on for kilobytes.

#include <nlohmann/json.hpp>
#include <string>
#include <string_view>

namespace hostport {

inline constexpr std::size_t kMaxEchoedBytes = 64;

/// JSON-quoted with ASCII escapes (quotes, newlines and DEL escaped), invalid UTF-8 replaced,
/// cut to kMaxEchoedBytes with "..." after the closing quote.
std::string quoteText(std::string_view text);

/// As quoteText() for strings; other scalars print as JSON, objects and arrays as {...} and [...]
/// (echoing them would be long and, for hostile input, deep).
std::string echo(const nlohmann::json& value);

}  // namespace hostport
