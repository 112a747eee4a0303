#include "agent/api/http_errors.h"

#include <array>

#include "common/quote.h"

namespace hostport::agent::api {
namespace {

struct Row {
  ErrorCode code;
  unsigned status;
  std::string_view machineCode;
};

// Machine codes are a public contract (hostportctl output, scripts): never rename one.
constexpr std::array kTable = {
    Row{ErrorCode::kInvalidArgument, 400, "invalid_argument"},
    Row{ErrorCode::kInvalidEnvironment, 400, "invalid_environment"},
    Row{ErrorCode::kIncompatibleVersion, 400, "incompatible_version"},
    Row{ErrorCode::kDecode, 400, "malformed_request"},
    Row{ErrorCode::kNotFound, 404, "not_found"},
    Row{ErrorCode::kConflict, 409, "port_conflict"},
    Row{ErrorCode::kExhausted, 409, "pool_exhausted"},
    Row{ErrorCode::kNotAllowed, 403, "not_allowed"},
    Row{ErrorCode::kQuotaExceeded, 409, "quota_exceeded"},
    Row{ErrorCode::kUnavailable, 503, "unavailable"},
    Row{ErrorCode::kIo, 500, "io_error"},
    Row{ErrorCode::kKernel, 500, "kernel_error"},
    Row{ErrorCode::kInternal, 500, "internal"},
};

const Row& rowFor(ErrorCode code) {
  for (const Row& row : kTable) {
    if (row.code == code) return row;
  }
  return kTable.back();
}

constexpr std::size_t kMaxErrorText = 4096;

}  // namespace

unsigned httpStatus(ErrorCode code) { return rowFor(code).status; }

std::string_view machineCode(ErrorCode code) { return rowFor(code).machineCode; }

ErrorCode errorCodeFor(std::string_view machineCode, unsigned status) {
  for (const Row& row : kTable) {
    if (row.machineCode == machineCode) return row.code;
  }
  switch (status) {
    case 400:
    case 413:  // a request over the agent's size limit ("too_large", from its sessions)
      return ErrorCode::kInvalidArgument;
    case 403:
      return ErrorCode::kNotAllowed;
    case 404:
      return ErrorCode::kNotFound;
    case 409:
      return ErrorCode::kConflict;
    case 503:
      return ErrorCode::kUnavailable;
    default:
      return ErrorCode::kInternal;
  }
}

nlohmann::json errorBody(const Error& error) {
  nlohmann::json body = {{"code", machineCode(error.code)}, {"message", error.message}};
  if (!error.details.empty()) body["details"] = error.details;
  return body;
}

Error errorFromBody(unsigned status, std::string_view body) {
  const nlohmann::json document = nlohmann::json::parse(body, nullptr, /*allow_exceptions=*/false);
  const auto text = [&](const char* key) -> std::string {
    if (!document.is_object()) return {};
    const auto it = document.find(key);
    if (it == document.end() || !it->is_string()) return {};
    return it->get<std::string>().substr(0, kMaxErrorText);
  };
  const std::string code = text("code");
  std::string message = text("message");
  if (message.empty()) {
    message = "HTTP status " + std::to_string(status);
    if (!body.empty()) message += ", body " + quoteText(body);
  }
  return Error{errorCodeFor(code, status), std::move(message), text("details")};
}

}  // namespace hostport::agent::api
