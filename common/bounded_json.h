#pragma once

#include <nlohmann/json.hpp>
#include <string_view>

#include "common/error.h"

namespace hostport {

/// Parses untrusted JSON without throwing. kDecode, prefixed with `what`, when the text is larger
/// than `maxBytes`, nested deeper than `maxDepth` (so code that walks the document recursively
/// cannot exhaust the stack), or not JSON.
Result<nlohmann::json> parseBoundedJson(std::string_view text, std::string_view what,
                                        std::size_t maxBytes, int maxDepth);

}  // namespace hostport
