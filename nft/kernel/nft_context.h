#pragma once

#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <string_view>
#include <system_error>

#include "common/error.h"

struct nft_ctx;

namespace hostport::nft::kernel {

struct LibNftables;

/// One libnftables context with buffered output and errors. Each run() is one transaction:
/// all of its commands apply, or none do.
class NftContext {
 public:
  static Result<NftContext> create();

  /// Runs text commands; the error carries libnftables' own message, and its errno as the cause.
  Result<std::string> run(std::string_view commands);
  /// Parses and evaluates the commands without committing anything.
  Result<void> check(std::string_view commands);
  /// Runs a `list` command and returns its JSON output.
  Result<nlohmann::json> list(std::string_view command);

 private:
  struct Deleter {
    const LibNftables* lib;
    void operator()(nft_ctx* ctx) const;
  };
  NftContext(const LibNftables& lib, nft_ctx* ctx) : lib_(&lib), ctx_(ctx, Deleter{&lib}) {}
  const LibNftables* lib_;  // libnftables.h: loaded by the first context
  std::unique_ptr<nft_ctx, Deleter> ctx_;
};

/// The errno behind libnftables' error text, or an empty code when the text names none (a syntax
/// error, say). libnftables reports failures as text only, such as "Error: Could not process
/// rule: File exists" or "Error: No such file or directory; did you mean table ...": run() reads
/// it here, once, into Error::cause, and everything above decides from the cause.
std::error_code nftErrorCause(std::string_view text);

/// True when the error's cause is ENOENT: a table, chain, set or element does not exist. Holds
/// for errors of libnftables (nftErrorCause) and of the netlink fast path alike.
bool isNotFound(const Error& error);
/// True when the error's cause is EEXIST: a key is already there with other data.
bool isAlreadyExists(const Error& error);

}  // namespace hostport::nft::kernel
