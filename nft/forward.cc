#include "nft/forward.h"

#include <algorithm>
#include <array>

#include "common/ascii.h"
#include "common/identifiers.h"
#include "common/quote.h"
#include "nft/table_layout.h"

namespace hostport::nft {
namespace {

constexpr std::size_t kMaxConditionsLength = 512;

// Words that start an nft statement or verdict. A condition must only narrow which packets the
// forward applies to; a statement (mark set, counter, drop, jump...) would act on them.
constexpr std::array<std::string_view, 30> kStatementWords = {
    "accept",   "drop",    "reject", "queue",   "continue", "return",   "jump", "goto",
    "counter",  "log",     "limit",  "quota",   "set",      "dnat",     "snat", "masquerade",
    "redirect", "notrack", "tproxy", "fwd",     "dup",      "synproxy", "flow", "add",
    "update",   "delete",  "meter",  "comment", "vmap",     "last"};

bool isConditionChar(char c) {
  // Everything an nft match needs (addresses, prefixes, sets, ranges, negation, comparison) and
  // nothing that ends a command (';', newline), starts a comment ('#') or a string ('"').
  return ascii::isAlnum(c) || std::string_view("._:/-,!=<>{}*").contains(c);
}

}  // namespace

Result<std::string> makeOwner(std::string_view containerId, std::string_view ifname) {
  if (const Problem problem = containerIdProblem(containerId)) {
    return fail(ErrorCode::kInvalidEnvironment,
                "container ID " + quoteText(containerId) + " " + std::string(*problem));
  }
  if (const Problem problem = ifnameProblem(ifname)) {
    return fail(ErrorCode::kInvalidEnvironment,
                "interface name " + quoteText(ifname) + " " + std::string(*problem));
  }
  return std::string(containerId) + "/" + std::string(ifname);
}

bool isOwnerTag(std::string_view text) {
  const auto slash = text.find('/');
  return slash != std::string_view::npos && isContainerId(text.substr(0, slash)) &&
         isIfname(text.substr(slash + 1));
}

Result<std::string> validateConditions(const std::vector<std::string>& parts) {
  std::string joined;
  for (const auto& part : parts) {
    for (const char c : part) {
      if (c != ' ' && c != '\t' && !isConditionChar(c)) {
        return fail(ErrorCode::kInvalidArgument, "condition " + quoteText(part) +
                                                     " holds a forbidden character " +
                                                     quoteText(std::string_view(&c, 1)));
      }
    }
    // Normalise blanks between tokens; newlines never got this far.
    std::string_view rest = part;
    while (!rest.empty()) {
      const auto start = std::ranges::find_if_not(rest, ascii::isSpace);
      rest.remove_prefix(static_cast<std::size_t>(start - rest.begin()));
      const auto end = std::ranges::find_if(rest, ascii::isSpace);
      const auto token = rest.substr(0, static_cast<std::size_t>(end - rest.begin()));
      if (!token.empty()) {
        if (!joined.empty()) joined += ' ';
        joined += token;
      }
      rest.remove_prefix(token.size());
    }
  }
  if (joined.size() > kMaxConditionsLength) {
    return fail(ErrorCode::kInvalidArgument, "conditions are longer than 512 characters");
  }
  int depth = 0;
  std::string_view rest = joined;
  while (!rest.empty()) {
    const auto space = rest.find(' ');
    const auto token = rest.substr(0, space);
    if (std::ranges::any_of(kStatementWords, [token](std::string_view word) {
          return ascii::equalsIgnoreCase(token, word);
        })) {
      return fail(ErrorCode::kInvalidArgument, "condition " + quoteText(joined) +
                                                   " holds the statement " + quoteText(token) +
                                                   ": conditions may only match packets");
    }
    for (const char c : token) {
      depth += c == '{' ? 1 : c == '}' ? -1 : 0;
      if (depth < 0) break;
    }
    if (depth < 0) break;
    rest.remove_prefix(space == std::string_view::npos ? rest.size() : space + 1);
  }
  if (depth != 0) {
    return fail(ErrorCode::kInvalidArgument,
                "condition " + quoteText(joined) + " has unbalanced braces");
  }
  return joined;
}

Forward unidentifiedRule(Family family) {
  return {Protocol::kTcp,
          std::nullopt,
          0,
          IpAddress::unspecified(family),
          0,
          std::string(kUnidentifiedRuleMarker)};
}

std::string describe(const Forward& forward) {
  if (isUnidentifiedRule(forward)) {
    return "an unidentified " + std::string(nftFamily(forward.family())) +
           " rule in chain conditional";
  }
  const IpAddress hostIp = forward.hostIp.value_or(IpAddress::unspecified(forward.family()));
  return std::string(protocolName(forward.protocol)) + " " +
         describeEndpoint(hostIp, forward.hostPort) + " -> " +
         describeEndpoint(forward.containerIp, forward.containerPort);
}

std::string describe(const Masquerade& masquerade) {
  return masquerade.podIp.str() +
         (masquerade.scope == MasqueradeScope::kPodSubnet ? " (pod subnet)" : " (every source)");
}

}  // namespace hostport::nft
