#include "nft/nft_context.h"

#include <nftables/libnftables.h>

namespace hostport::nft {

void NftContext::Deleter::operator()(nft_ctx* ctx) const { nft_ctx_free(ctx); }

Result<NftContext> NftContext::create() {
  nft_ctx* raw = nft_ctx_new(NFT_CTX_DEFAULT);
  if (raw == nullptr) return fail(ErrorCode::kKernel, "libnftables: nft_ctx_new failed");
  NftContext context(raw);
  if (nft_ctx_buffer_output(raw) != 0 || nft_ctx_buffer_error(raw) != 0) {
    return fail(ErrorCode::kKernel, "libnftables: cannot buffer output");
  }
  return context;
}

Result<std::string> NftContext::run(std::string_view commands) {
  const std::string buffer(commands);  // libnftables wants a NUL-terminated string
  const int rc = nft_run_cmd_from_buffer(ctx_.get(), buffer.c_str());
  const char* output = nft_ctx_get_output_buffer(ctx_.get());
  const char* error = nft_ctx_get_error_buffer(ctx_.get());
  if (rc != 0) {
    std::string message = error != nullptr && *error != '\0' ? error : "libnftables failed";
    while (!message.empty() && message.back() == '\n') message.pop_back();
    return fail(ErrorCode::kKernel, message);
  }
  return std::string(output != nullptr ? output : "");
}

Result<void> NftContext::check(std::string_view commands) {
  nft_ctx_set_dry_run(ctx_.get(), true);
  auto output = run(commands);
  nft_ctx_set_dry_run(ctx_.get(), false);
  if (!output) return std::unexpected(output.error());
  return {};
}

Result<nlohmann::json> NftContext::list(std::string_view command) {
  const unsigned int flags = nft_ctx_output_get_flags(ctx_.get());
  nft_ctx_output_set_flags(ctx_.get(), flags | NFT_CTX_OUTPUT_JSON | NFT_CTX_OUTPUT_HANDLE);
  auto output = run(command);
  nft_ctx_output_set_flags(ctx_.get(), flags);
  if (!output) return std::unexpected(output.error());
  auto document = nlohmann::json::parse(*output, nullptr, false);
  if (document.is_discarded()) {
    return fail(ErrorCode::kKernel,
                "libnftables printed JSON we cannot parse for: " + std::string(command));
  }
  return document;
}

bool isNotFound(const Error& error) {
  return error.message.find("No such file or directory") != std::string::npos;
}

bool isAlreadyExists(const Error& error) {
  return error.message.find("File exists") != std::string::npos;
}

}  // namespace hostport::nft
