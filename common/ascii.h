#pragma once
// Character classes of single bytes, by ASCII alone. <cctype> answers by the process's locale
// (and is undefined for negative chars), so a grammar written with it can accept different text
// on different hosts; every grammar of untrusted text uses these instead. A byte >= 0x80 is in
// no class.

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

}  // namespace hostport::ascii
