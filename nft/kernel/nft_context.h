#pragma once

#include <nlohmann/json.hpp>
#include <string>
#include <string_view>
#include <system_error>
#include <vector>

#include "common/error.h"

namespace hostport::nft::kernel {

/// The `nft` command, for what only its parser can do: rules with portmap-style conditions
/// (user text) and listing them back. Everything else goes over netlink (element_table.h,
/// layout_messages.h), so a node that never uses conditions needs no nftables userspace at all.
///
/// Design note: `nft` is run, not libnftables loaded. The plugin is a static binary (it must run
/// on any node), and a static binary cannot dlopen a shared library built against another libc.
/// kube-proxy's nftables mode (knftables) runs the command the same way. Each run() is one
/// transaction: all of its commands apply, or none do. The program inherits the calling thread's
/// netns.
class NftContext {
 public:
  /// Finds `nft` (kNftPaths). kNotFound, naming the package, when the node has none.
  static Result<NftContext> create();

  /// Runs text commands; the error carries nft's own message, and its errno as the cause.
  Result<std::string> run(std::string_view commands);
  /// Parses and evaluates the commands without committing anything (`nft --check`).
  Result<void> check(std::string_view commands);
  /// Runs a `list` command (words separated by single spaces) and returns its JSON output, with
  /// rule handles.
  Result<nlohmann::json> list(std::string_view command);

  const std::string& program() const { return program_; }

 private:
  explicit NftContext(std::string program) : program_(std::move(program)) {}
  /// Runs nft with `arguments`, `input` on its stdin.
  Result<std::string> execute(std::vector<std::string> arguments, std::string_view input);
  std::string program_;
};

/// The errno behind nft's error text, or an empty code when the text names none (a syntax
/// error, say). nft reports failures as text only, such as "Error: Could not process rule: File
/// exists" or "Error: No such file or directory; did you mean table ...": run() reads it here,
/// once, into Error::cause, and everything above decides from the cause.
std::error_code nftErrorCause(std::string_view text);

/// True when the error's cause is ENOENT: a table, chain, set or element does not exist. Holds
/// for errors of nft (nftErrorCause) and of the netlink paths alike.
bool isNotFound(const Error& error);
/// True when the error's cause is EEXIST: a key is already there with other data.
bool isAlreadyExists(const Error& error);
/// A dump the kernel interrupted (NLM_F_DUMP_INTR: a transaction committed meanwhile): read again.
bool isDumpInterrupted(const Error& error);

}  // namespace hostport::nft::kernel
