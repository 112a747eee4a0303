#pragma once
// RFC 3986 percent-encoding, the one codec of URL path segments and query values: the agent's
// routes and its clients, and the API client's list and watch queries.

#include <string>
#include <string_view>

#include "common/error.h"

namespace hostport {

/// Escapes everything but the unreserved characters [A-Za-z0-9-._~].
std::string percentEncode(std::string_view text);
/// The inverse; kInvalidArgument for a malformed escape. '+' stays '+'.
Result<std::string> percentDecode(std::string_view text);

}  // namespace hostport
