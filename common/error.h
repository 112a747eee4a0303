#pragma once
// Errors are values at every module boundary. Each boundary (CNI, HTTP) maps ErrorCode to its
// own outside codes in exactly one table.

#include <expected>
#include <string>
#include <utility>

namespace hostport {

enum class ErrorCode {
  kInvalidArgument,      // bad input: config, annotation, request field
  kInvalidEnvironment,   // bad CNI_* environment
  kIncompatibleVersion,  // unsupported CNI version
  kDecode,               // input is not parseable (malformed JSON)
  kNotFound,             // the thing asked about is not there
  kConflict,             // a port is held by someone else
  kExhausted,            // a pool has no free port
  kUnavailable,          // a peer (the agent) cannot be reached; retry later
  kKernel,               // nftables, netlink or sysctl refused
  kIo,                   // file system
  kInternal,             // a bug
};

struct Error {
  ErrorCode code = ErrorCode::kInternal;
  std::string message;
  std::string details;
};

template <typename T = void>
using Result = std::expected<T, Error>;

inline std::unexpected<Error> fail(ErrorCode code, std::string message, std::string details = {}) {
  return std::unexpected(Error{code, std::move(message), std::move(details)});
}

/// Adds context in front of an error's message, keeping its code.
inline std::unexpected<Error> withContext(Error error, const std::string& context) {
  error.message = context + ": " + error.message;
  return std::unexpected(std::move(error));
}

}  // namespace hostport
