#include "agent/api/validation.h"

#include <algorithm>

namespace hostport::agent::api {
namespace {

bool isLowerAlnum(char c) { return (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9'); }
bool isAlnum(char c) { return isLowerAlnum(c) || (c >= 'A' && c <= 'Z'); }
// Printable ASCII without space: rejects control characters, DEL and every non-ASCII byte.
bool isGraph(char c) { return c > ' ' && c < '\x7f'; }

bool isLabel(std::string_view text, std::size_t maxLength) {
  return !text.empty() && text.size() <= maxLength && isLowerAlnum(text.front()) &&
         isLowerAlnum(text.back()) &&
         std::ranges::all_of(text, [](char c) { return isLowerAlnum(c) || c == '-'; });
}

}  // namespace

bool isDnsLabel(std::string_view text) { return isLabel(text, kMaxNameLength); }

bool isDnsSubdomain(std::string_view text) {
  if (text.empty() || text.size() > kMaxPodNameLength) return false;
  for (std::size_t start = 0;;) {
    const std::size_t dot = text.find('.', start);
    if (!isLabel(text.substr(start, dot - start), kMaxNameLength)) return false;
    if (dot == std::string_view::npos) return true;
    start = dot + 1;
  }
}

bool isContainerId(std::string_view text) {
  return !text.empty() && text.size() <= kMaxContainerIdLength && isAlnum(text.front()) &&
         std::ranges::all_of(text,
                             [](char c) { return isAlnum(c) || c == '_' || c == '.' || c == '-'; });
}

bool isIfname(std::string_view text) {
  return !text.empty() && text.size() <= kMaxIfnameLength && text != "." && text != ".." &&
         std::ranges::all_of(text, [](char c) {
           return isGraph(c) && c != '/' && c != ':' && c != '"' && c != '\\';
         });
}

bool isPodUid(std::string_view text) {
  return !text.empty() && text.size() <= kMaxPodUidLength &&
         std::ranges::all_of(text, [](char c) { return isAlnum(c) || c == '-'; });
}

bool isNetnsPath(std::string_view text) {
  return !text.empty() && text.size() <= kMaxNetnsLength && text.front() == '/' &&
         std::ranges::all_of(text, [](char c) { return isGraph(c) || c == ' '; });
}

}  // namespace hostport::agent::api
