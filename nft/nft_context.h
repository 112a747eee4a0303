#pragma once

#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <string_view>

#include "common/error.h"

struct nft_ctx;

namespace hostport::nft {

struct LibNftables;

/// One libnftables context with buffered output and errors. Each run() is one transaction:
/// all of its commands apply, or none do.
class NftContext {
 public:
  static Result<NftContext> create();

  /// Runs text commands; the error carries libnftables' own message.
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

/// True when libnftables said the object does not exist (ENOENT).
bool isNotFound(const Error& error);
/// True when libnftables said a key is already there with other data (EEXIST).
bool isAlreadyExists(const Error& error);

}  // namespace hostport::nft
