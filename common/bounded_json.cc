#include "common/bounded_json.h"

#include <string>

#include "common/quote.h"

namespace hostport {

namespace {

template <typename Document>
Result<Document> parseBounded(std::string_view text, std::string_view what, std::size_t maxBytes,
                              int maxDepth) {
  const std::string prefix = std::string(what) + ": ";
  if (text.size() > maxBytes) {
    return fail(ErrorCode::kDecode, prefix + std::to_string(text.size()) +
                                        " bytes exceed the limit of " + std::to_string(maxBytes));
  }
  bool tooDeep = false;
  const typename Document::parser_callback_t limitDepth =
      [&tooDeep, maxDepth](int depth, typename Document::parse_event_t, Document&) {
        tooDeep = tooDeep || depth > maxDepth;
        return !tooDeep;
      };
  auto document = Document::parse(text.begin(), text.end(), limitDepth, /*allow_exceptions=*/false);
  if (tooDeep) {
    return fail(ErrorCode::kDecode,
                prefix + "JSON nested deeper than " + std::to_string(maxDepth) + " levels");
  }
  if (document.is_discarded()) return fail(ErrorCode::kDecode, prefix + "not valid JSON");
  return document;
}

}  // namespace

Result<nlohmann::json> parseBoundedJson(std::string_view text, std::string_view what,
                                        std::size_t maxBytes, int maxDepth) {
  return parseBounded<nlohmann::json>(text, what, maxBytes, maxDepth);
}

Result<nlohmann::ordered_json> parseBoundedOrderedJson(std::string_view text, std::string_view what,
                                                       std::size_t maxBytes, int maxDepth) {
  return parseBounded<nlohmann::ordered_json>(text, what, maxBytes, maxDepth);
}

std::string echo(const nlohmann::json& value) {
  if (value.is_object()) return "{...}";
  if (value.is_array() || value.is_binary()) return "[...]";
  if (value.is_string()) return quoteText(value.get_ref<const std::string&>());
  return value.dump();
}

}  // namespace hostport
