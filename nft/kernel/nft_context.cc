#include "nft/kernel/nft_context.h"

#include <unistd.h>

#include <chrono>
#include <functional>
#include <map>
#include <string>

#include "common/subprocess.h"

namespace hostport::nft::kernel {
namespace {

// Where Debian, Ubuntu, RHEL and Alpine put it; the plugin's PATH is the runtime's, so no search.
constexpr const char* kNftPaths[] = {"/usr/sbin/nft", "/sbin/nft", "/usr/local/sbin/nft",
                                     "/usr/bin/nft"};
// A listing of a table with every port forwarded is tens of megabytes and takes seconds.
constexpr std::chrono::milliseconds kNftDeadline{30'000};
constexpr std::size_t kMaxOutput = 256u << 20;

// Past the largest errno Linux defines (EHWPOISON, 133); strerror() of the rest is "Unknown error".
constexpr int kMaxErrno = 256;

/// The errno whose strerror() text is `reason`; 0 for none. The table is built once: a missing
/// ip6 table makes every CHECK and DEL with conditional rules read an "Error:" line.
int errnoOfText(std::string_view reason) {
  static const std::map<std::string, int, std::less<>> kErrnoByText = [] {
    std::map<std::string, int, std::less<>> byText;
    for (int errnum = 1; errnum < kMaxErrno; ++errnum) {
      // emplace keeps the lowest errno of a text, as a scan from 1 upwards finds it.
      byText.emplace(std::error_code(errnum, std::generic_category()).message(), errnum);
    }
    return byText;
  }();
  const auto found = kErrnoByText.find(reason);
  return found == kErrnoByText.end() ? 0 : found->second;
}

}  // namespace

Result<NftContext> NftContext::create() {
  for (const char* path : kNftPaths) {
    if (::access(path, X_OK) == 0) return NftContext(path);
  }
  std::string looked;
  for (const char* path : kNftPaths) looked += std::string(looked.empty() ? "" : ", ") + path;
  // No errno as the cause: isNotFound() means a missing table or element, which this is not.
  return fail(ErrorCode::kNotFound,
              "nftables rules with conditions (conditionsV4/conditionsV6) need the nft command "
              "(the nftables package); none at " +
                  looked);
}

Result<std::string> NftContext::execute(std::vector<std::string> arguments,
                                        std::string_view input) {
  arguments.insert(arguments.begin(), program_);
  auto ran = runProgram({std::move(arguments),
                         {"PATH=/usr/sbin:/usr/bin:/sbin:/bin"},
                         std::string(input),
                         kNftDeadline,
                         kMaxOutput});
  if (!ran) return withContext(ran.error(), "running " + program_);
  if (!ran->succeeded()) {
    std::string message = ran->err.empty() ? program_ + " " + ran->describe() : ran->err;
    while (!message.empty() && message.back() == '\n') message.pop_back();
    const std::error_code cause = nftErrorCause(message);
    return std::unexpected(Error{ErrorCode::kKernel, std::move(message), {}, cause});
  }
  return std::move(ran->out);
}

Result<std::string> NftContext::run(std::string_view commands) {
  return execute({"-f", "-"}, commands);
}

Result<void> NftContext::check(std::string_view commands) {
  HOSTPORT_TRY_VOID(execute({"--check", "-f", "-"}, commands));
  return {};
}

Result<nlohmann::json> NftContext::list(std::string_view command) {
  // With --json, nft reads a file as JSON: the command goes in argv, one word each.
  std::vector<std::string> arguments{"--json", "--handle"};
  for (size_t at = 0; at < command.size();) {
    const size_t end = std::min(command.find(' ', at), command.size());
    if (end > at) arguments.emplace_back(command.substr(at, end - at));
    at = end + 1;
  }
  HOSTPORT_TRY(const std::string text, execute(std::move(arguments), {}));
  auto document = nlohmann::json::parse(text, nullptr, false);
  if (document.is_discarded()) {
    return fail(ErrorCode::kKernel,
                program_ + " printed JSON we cannot parse for: " + std::string(command));
  }
  return document;
}

std::error_code nftErrorCause(std::string_view text) {
  // Each failed command gives one line "Error: <reason>", after a location prefix without spaces
  // ("/dev/stdin:1:19-29: ") when the input has a name, followed by the command line echoed back.
  // The reason is strerror()'s text, alone or followed by "; did you mean ...". Only such lines
  // count: an echoed command may hold any words, "Error: File exists" included.
  constexpr std::string_view kError = "Error: ";
  constexpr std::string_view kRule = "Could not process rule: ";
  while (!text.empty()) {
    const size_t newline = text.find('\n');
    std::string_view line = text.substr(0, newline);
    text = newline == std::string_view::npos ? std::string_view() : text.substr(newline + 1);
    const size_t at = line.find(kError);
    if (at == std::string_view::npos) continue;
    const std::string_view location = line.substr(0, at);
    if (!location.empty() && (!location.ends_with(": ") || location.find(' ') != at - 1)) continue;
    std::string_view reason = line.substr(at + kError.size());
    reason = reason.substr(0, reason.find(';'));
    if (reason.starts_with(kRule)) reason.remove_prefix(kRule.size());
    if (const int errnum = errnoOfText(reason); errnum != 0) {
      return std::error_code(errnum, std::generic_category());
    }
  }
  return {};
}

bool isNotFound(const Error& error) { return error.cause == std::errc::no_such_file_or_directory; }

bool isAlreadyExists(const Error& error) { return error.cause == std::errc::file_exists; }

bool isDumpInterrupted(const Error& error) { return error.cause == std::errc::interrupted; }

}  // namespace hostport::nft::kernel
