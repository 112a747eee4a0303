#pragma once

#include <nlohmann/json.hpp>
#include <string>
#include <string_view>

#include "common/error.h"

namespace hostport {

/// Parses untrusted JSON without throwing. kDecode, prefixed with `what`, when the text is larger
/// than `maxBytes`, nested deeper than `maxDepth` (so code that walks the document recursively
/// cannot exhaust the stack), or not JSON.
Result<nlohmann::json> parseBoundedJson(std::string_view text, std::string_view what,
                                        std::size_t maxBytes, int maxDepth);

/// parseBoundedJson() keeping each object's key order (files we rewrite for others).
Result<nlohmann::ordered_json> parseBoundedOrderedJson(std::string_view text, std::string_view what,
                                                       std::size_t maxBytes, int maxDepth);

/// A JSON value for an error message: strings through quoteText() (common/quote.h), other scalars
/// as JSON, objects and arrays (and binary values) as {...} and [...] (echoing them would be long
/// and, for hostile input, deep).
std::string echo(const nlohmann::json& value);

}  // namespace hostport
