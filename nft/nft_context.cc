#include "nft/nft_context.h"

#include "nft/libnftables.h"

namespace hostport::nft {

void NftContext::Deleter::operator()(nft_ctx* ctx) const { lib->ctxFree(ctx); }

Result<NftContext> NftContext::create() {
  auto lib = libNftables();
  if (!lib) return std::unexpected(lib.error());
  nft_ctx* raw = (*lib)->ctxNew(NFT_CTX_DEFAULT);
  if (raw == nullptr) return fail(ErrorCode::kKernel, "libnftables: nft_ctx_new failed");
  NftContext context(**lib, raw);
  if ((*lib)->bufferOutput(raw) != 0 || (*lib)->bufferError(raw) != 0) {
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
    return fail(ErrorCode::kKernel, message);
  }
  return std::string(output != nullptr ? output : "");
}

Result<void> NftContext::check(std::string_view commands) {
  lib_->setDryRun(ctx_.get(), true);
  auto output = run(commands);
  lib_->setDryRun(ctx_.get(), false);
  if (!output) return std::unexpected(output.error());
  return {};
}

Result<nlohmann::json> NftContext::list(std::string_view command) {
  const unsigned int flags = lib_->outputFlags(ctx_.get());
  lib_->setOutputFlags(ctx_.get(), flags | NFT_CTX_OUTPUT_JSON | NFT_CTX_OUTPUT_HANDLE);
  auto output = run(command);
  lib_->setOutputFlags(ctx_.get(), flags);
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
