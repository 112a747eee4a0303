#pragma once
// Character classes of single bytes, by ASCII alone. <cctype> answers by the process's locale
// (and is undefined for negative chars), so a grammar written with it can accept different text
// on different hosts; every grammar of untrusted text uses these instead. A byte >= 0x80 is in
// no class.

#include <algorithm>
#include <string>
#include <string_view>

namespace hostport::ascii {

constexpr bool isDigit(char c) { return c >= '0' && c <= '9'; }
constexpr bool isLower(char c) { return c >= 'a' && c <= 'z'; }
constexpr bool isUpper(char c) { return c >= 'A' && c <= 'Z'; }
constexpr bool isAlnum(char c) { return isDigit(c) || isLower(c) || isUpper(c); }
/// ' ', '\t', '\n', '\v', '\f' and '\r', as isspace() in the "C" locale.
constexpr bool isSpace(char c) { return c == ' ' || (c >= '\t' && c <= '\r'); }
/// Printable and not a space: '!' to '~'.
constexpr bool isGraph(char c) { return c > ' ' && c < '\x7f'; }
/// Printable: ' ' to '~'.
constexpr bool isPrint(char c) { return c >= ' ' && c < '\x7f'; }
constexpr char toLower(char c) { return isUpper(c) ? static_cast<char>(c - 'A' + 'a') : c; }
constexpr char toUpper(char c) { return isLower(c) ? static_cast<char>(c - 'a' + 'A') : c; }

/// A copy of `text` with 'A'-'Z' lowered; every other byte, non-ASCII included, kept as it is.
inline std::string lowercase(std::string_view text) {
  std::string out(text);
  std::ranges::transform(out, out.begin(), toLower);
  return out;
}

/// A copy of `text` with 'a'-'z' raised; every other byte kept as it is.
inline std::string uppercase(std::string_view text) {
  std::string out(text);
  std::ranges::transform(out, out.begin(), toUpper);
  return out;
}

/// Whether `a` and `b` are equal once 'A'-'Z' are lowered, as protocol names and JSON keys that
/// runtimes spell in either case ("TCP", "HostPort") are compared.
constexpr bool equalsIgnoreCase(std::string_view a, std::string_view b) {
  return std::ranges::equal(a, b, [](char x, char y) { return toLower(x) == toLower(y); });
}

}  // namespace hostport::ascii
