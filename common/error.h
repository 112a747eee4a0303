#pragma once
// Errors are values at every module boundary. Each boundary (CNI, HTTP) maps ErrorCode to its
// own outside codes in exactly one table.
//
// Propagation, one style for the whole tree: an error passed on unchanged goes through
// HOSTPORT_TRY / HOSTPORT_TRY_VOID; an error that gains context goes through withContext(), so
// the reader sees at a glance which errors are annotated on their way up.
//
// Causes: an error that comes from a failed syscall or a kernel answer carries that errno as its
// `cause` (systemError() builds both the message and the cause). Code that must tell "not there"
// or "already there" from other failures asks the cause, never the message: the message is for
// people, and a reworded text or the kernel's extended-ACK reason must not change behaviour.

#include <expected>
#include <string>
#include <string_view>
#include <system_error>
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
  kNotAllowed,           // a pool's rules refuse the request (namespaces)
  kQuotaExceeded,        // a pool's quota (per namespace, per pod) would be exceeded
  kUnavailable,          // a peer (the agent) cannot be reached; retry later
  kKernel,               // nftables, netlink or sysctl refused
  kIo,                   // file system
  kInternal,             // a bug
};

struct Error {
  ErrorCode code = ErrorCode::kInternal;
  std::string message;
  std::string details;
  std::error_code cause{};  // the errno behind it (std::generic_category()); empty when none
};

template <typename T = void>
using Result = std::expected<T, Error>;

inline std::unexpected<Error> fail(ErrorCode code, std::string message, std::string details = {}) {
  return std::unexpected(Error{code, std::move(message), std::move(details)});
}

/// The Error of a failed syscall or kernel answer: message "<what>: <strerror text>", with `errnum`
/// as its cause.
inline Error systemError(ErrorCode code, std::string_view what, int errnum) {
  std::error_code cause(errnum, std::generic_category());
  std::string message(what);
  message += ": ";
  message += cause.message();
  return Error{code, std::move(message), {}, cause};
}

/// systemError() as a failed Result.
inline std::unexpected<Error> failSystem(ErrorCode code, std::string_view what, int errnum) {
  return std::unexpected(systemError(code, what, errnum));
}

/// Adds context in front of an error's message, keeping its code and cause.
inline std::unexpected<Error> withContext(Error error, const std::string& context) {
  error.message = context + ": " + error.message;
  return std::unexpected(std::move(error));
}

}  // namespace hostport

#define HOSTPORT_TRY_CONCAT_INNER(a, b) a##b
#define HOSTPORT_TRY_CONCAT(a, b) HOSTPORT_TRY_CONCAT_INNER(a, b)
#define HOSTPORT_TRY_RESULT HOSTPORT_TRY_CONCAT(hostport_try_result_, __LINE__)

/// `HOSTPORT_TRY(auto value, parse(text));` declares (or assigns) `value` from a Result, or returns
/// the Result's error unchanged from the enclosing function. It expands to several statements, so
/// write it as a statement of its own, never as the body of an unbraced if or loop.
#define HOSTPORT_TRY(target, expression)                            \
  auto HOSTPORT_TRY_RESULT = (expression);                          \
  if (!HOSTPORT_TRY_RESULT) {                                       \
    return std::unexpected(std::move(HOSTPORT_TRY_RESULT).error()); \
  }                                                                 \
  target = std::move(*HOSTPORT_TRY_RESULT)

/// `HOSTPORT_TRY_VOID(check(value));` returns the error of a failed Result unchanged from the
/// enclosing function, and drops the value of a successful one.
#define HOSTPORT_TRY_VOID(expression)                                    \
  do {                                                                   \
    if (auto HOSTPORT_TRY_RESULT = (expression); !HOSTPORT_TRY_RESULT) { \
      return std::unexpected(std::move(HOSTPORT_TRY_RESULT).error());    \
    }                                                                    \
  } while (false)
