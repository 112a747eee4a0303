#pragma once
// The one table between internal error codes and the control socket's HTTP statuses and stable
// machine codes. The agent writes error bodies with it and the client reads them back with it, so
// an ErrorCode survives the socket unchanged.

#include <nlohmann/json.hpp>
#include <string>
#include <string_view>

#include "common/error.h"

namespace hostport::agent::api {

unsigned httpStatus(ErrorCode code);           // 400, 403, 404, 409, 500, 503
std::string_view machineCode(ErrorCode code);  // "invalid_argument", "port_conflict", ...

/// The ErrorCode for a body's machine code. An unknown code (a newer agent) falls back on the
/// HTTP status: 400 and 413 kInvalidArgument, 403 kNotAllowed, 404 kNotFound, 409 kConflict, 503
/// kUnavailable, else kInternal.
ErrorCode errorCodeFor(std::string_view machineCode, unsigned status);

/// {"code": machineCode, "message": ..., "details": ... (only when not empty)}.
nlohmann::json errorBody(const Error& error);

/// Reads an error body back. A body that is not one of ours (a proxy's HTML, garbage) still gives
/// an Error: its code comes from the status and its message names the status.
Error errorFromBody(unsigned status, std::string_view body);

}  // namespace hostport::agent::api
