#pragma once
// Text from pods, CNI input and the host (a process's comm) ends up in error messages and logs.
// It is quoted through one function so it can never forge a log line or run on for kilobytes.

#include <cstddef>
#include <string>
#include <string_view>

namespace hostport::agent {

/// `text` cut to `limit` characters, with anything but printable ASCII (and the double quote and
/// backslash) shown as '?'.
inline std::string sanitized(std::string_view text, std::size_t limit = 64) {
  std::string out;
  for (std::size_t i = 0; i < text.size() && i < limit; ++i) {
    const unsigned char c = static_cast<unsigned char>(text[i]);
    out += (c >= 0x20 && c < 0x7f && c != '"' && c != '\\') ? static_cast<char>(c) : '?';
  }
  if (text.size() > limit) out += "...";
  return out;
}

/// `text` sanitized and in double quotes, for naming input in a message.
inline std::string quoted(std::string_view text, std::size_t limit = 64) {
  return "\"" + sanitized(text, limit) + "\"";
}

}  // namespace hostport::agent
