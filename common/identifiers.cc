#include "common/identifiers.h"

#include <net/if.h>

#include <algorithm>

#include "common/ascii.h"

namespace hostport {

static_assert(kMaxIfnameLength == IF_NAMESIZE - 1, "the kernel's names hold a terminating NUL");

namespace {

bool isLowerAlnum(char c) { return ascii::isLower(c) || ascii::isDigit(c); }

bool isLabel(std::string_view text) {
  return !text.empty() && text.size() <= kMaxDnsLabelLength && isLowerAlnum(text.front()) &&
         isLowerAlnum(text.back()) &&
         std::ranges::all_of(text, [](char c) { return isLowerAlnum(c) || c == '-'; });
}

/// `problem` unless `valid`: for the grammars whose one sentence says all there is to say.
Problem unless(bool valid, std::string_view problem) {
  if (valid) return std::nullopt;
  return problem;
}

}  // namespace

bool isContainerId(std::string_view text) {
  return text.size() <= kMaxContainerIdLength && isNetworkName(text);
}

bool isNetworkName(std::string_view text) {
  return !text.empty() && text.size() <= kMaxNetworkNameLength && ascii::isAlnum(text.front()) &&
         std::ranges::all_of(
             text, [](char c) { return ascii::isAlnum(c) || c == '_' || c == '.' || c == '-'; });
}

Problem networkNameProblem(std::string_view text) {
  return unless(isNetworkName(text),
                "must be 1-253 characters of [A-Za-z0-9_.-], starting alphanumeric");
}

Problem containerIdProblem(std::string_view text) {
  return unless(isContainerId(text),
                "must be 1-100 characters of [A-Za-z0-9_.-], starting alphanumeric");
}

bool isIfname(std::string_view text) { return !ifnameProblem(text); }

Problem ifnameProblem(std::string_view text) {
  if (text.empty()) return "must not be empty";
  if (text.size() > kMaxIfnameLength) return "is longer than 15 characters";
  if (text == "." || text == "..") return "is not a valid name";
  for (const char c : text) {
    if (ascii::isSpace(c)) return "must not contain whitespace";
    if (!ascii::isPrint(c)) return "must contain only printable ASCII characters";
    switch (c) {
      case '/':
        return "must not contain '/'";
      case ':':
        return "must not contain ':'";
      case '"':
        return "must not contain '\"'";
      case '\\':
        return "must not contain '\\'";
      default:
        break;
    }
  }
  return std::nullopt;
}

bool isKernelIfname(std::string_view text) {
  if (text.empty() || text.size() > kMaxIfnameLength || text == "." || text == "..") return false;
  return std::ranges::none_of(text, [](char c) {
    const auto byte = static_cast<unsigned char>(c);
    return c == '/' || c == ':' || byte <= ' ' || byte == 0x7f;
  });
}

bool isDnsLabel(std::string_view text) { return isLabel(text); }

Problem dnsLabelProblem(std::string_view text) {
  return unless(isDnsLabel(text),
                "must be lowercase letters, digits and '-', start and end with a letter or digit, "
                "and be at most 63 characters");
}

bool isDnsSubdomain(std::string_view text) {
  if (text.empty() || text.size() > kMaxDnsSubdomainLength) return false;
  for (std::size_t start = 0;;) {
    const std::size_t dot = text.find('.', start);
    if (!isLabel(text.substr(start, dot - start))) return false;
    if (dot == std::string_view::npos) return true;
    start = dot + 1;
  }
}

Problem dnsSubdomainProblem(std::string_view text) {
  return unless(isDnsSubdomain(text), "must be a DNS subdomain of at most 253 characters");
}

bool isPodUid(std::string_view text) {
  return !text.empty() && text.size() <= kMaxPodUidLength &&
         std::ranges::all_of(text, [](char c) { return ascii::isAlnum(c) || c == '-'; });
}

Problem podUidProblem(std::string_view text) {
  return unless(isPodUid(text), "must be 1-128 characters of [A-Za-z0-9-]");
}

bool isNetnsPath(std::string_view text) {
  return !text.empty() && text.size() <= kMaxNetnsPathLength && text.front() == '/' &&
         std::ranges::all_of(text, ascii::isPrint);
}

Problem netnsPathProblem(std::string_view text) {
  return unless(isNetnsPath(text), "must be an absolute path of printable characters");
}

}  // namespace hostport
