#include "nft/kernel/nft_context.h"

#include <functional>
#include <map>
#include <string>

#include "nft/kernel/libnftables.h"

namespace hostport::nft::kernel {
namespace {

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

void NftContext::Deleter::operator()(nft_ctx* ctx) const { lib->ctxFree(ctx); }

Result<NftContext> NftContext::create() {
  HOSTPORT_TRY(const LibNftables* lib, libNftables());
  nft_ctx* raw = lib->ctxNew(NFT_CTX_DEFAULT);
  if (raw == nullptr) return fail(ErrorCode::kKernel, "libnftables: nft_ctx_new failed");
  NftContext context(*lib, raw);
  if (lib->bufferOutput(raw) != 0 || lib->bufferError(raw) != 0) {
    return fail(ErrorCode::kKernel, "libnftables: cannot buffer output");
  }
  return context;
}

Result<std::string> NftContext::run(std::string_view commands) {
  const std::string buffer(commands);  // libnftables wants a NUL-terminated string
  const int rc = lib_->runCommands(ctx_.get(), buffer.c_str());
  const char* output = lib_->outputBuffer(ctx_.get());
  const char* error = lib_->errorBuffer(ctx_.get());
  if (rc != 0) {
    std::string message = error != nullptr && *error != '\0' ? error : "libnftables failed";
    while (!message.empty() && message.back() == '\n') message.pop_back();
    const std::error_code cause = nftErrorCause(message);
    return std::unexpected(Error{ErrorCode::kKernel, std::move(message), {}, cause});
  }
  return std::string(output != nullptr ? output : "");
}

Result<void> NftContext::check(std::string_view commands) {
  lib_->setDryRun(ctx_.get(), true);
  auto output = run(commands);
  lib_->setDryRun(ctx_.get(), false);
  HOSTPORT_TRY_VOID(std::move(output));
  return {};
}

Result<nlohmann::json> NftContext::list(std::string_view command) {
  const unsigned int flags = lib_->outputFlags(ctx_.get());
  lib_->setOutputFlags(ctx_.get(), flags | NFT_CTX_OUTPUT_JSON | NFT_CTX_OUTPUT_HANDLE);
  auto output = run(command);
  lib_->setOutputFlags(ctx_.get(), flags);
  HOSTPORT_TRY(const std::string text, std::move(output));
  auto document = nlohmann::json::parse(text, nullptr, false);
  if (document.is_discarded()) {
    return fail(ErrorCode::kKernel,
                "libnftables printed JSON we cannot parse for: " + std::string(command));
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

}  // namespace hostport::nft::kernel
