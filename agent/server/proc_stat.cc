#include "agent/server/proc_stat.h"

#include <charconv>
#include <string>

#include "common/quote.h"

namespace hostport::agent::server {
namespace {

constexpr std::size_t kStartTimeField = 22;
constexpr std::size_t kStateField = 3;

/// The next space-separated field of `rest`, which loses it.
std::string_view nextField(std::string_view& rest) {
  while (!rest.empty() && rest.front() == ' ') rest.remove_prefix(1);
  const auto end = rest.find(' ');
  const auto field = rest.substr(0, end);
  rest.remove_prefix(end == std::string_view::npos ? rest.size() : end);
  return field;
}

}  // namespace

Result<ProcStat> parseProcStat(std::string_view text) {
  const auto commEnd = text.rfind(')');
  if (commEnd == std::string_view::npos || text.find('(') > commEnd) {
    return fail(ErrorCode::kInvalidArgument,
                "/proc stat " + quoteText(text) + " has no command name in parentheses");
  }
  std::string_view rest = text.substr(commEnd + 1);
  if (!rest.empty() && rest.back() == '\n') rest.remove_suffix(1);
  ProcStat stat;
  for (std::size_t field = kStateField; field <= kStartTimeField; ++field) {
    const auto value = nextField(rest);
    if (value.empty()) {
      return fail(ErrorCode::kInvalidArgument,
                  "/proc stat " + quoteText(text) + " ends before field " + std::to_string(field));
    }
    if (field == kStateField) {
      if (value.size() != 1) {
        return fail(ErrorCode::kInvalidArgument,
                    "/proc stat: state " + quoteText(value) + " is not one letter");
      }
      stat.state = value.front();
    } else if (field == kStartTimeField) {
      const auto [end, error] =
          std::from_chars(value.data(), value.data() + value.size(), stat.startTime);
      if (error != std::errc() || end != value.data() + value.size()) {
        return fail(ErrorCode::kInvalidArgument,
                    "/proc stat: start time " + quoteText(value) + " is not a whole number");
      }
    }
  }
  return stat;
}

}  // namespace hostport::agent::server
