#include "agent/server/http_framing.h"

#include <string>
#include <string_view>
#include <vector>

#include "agent/server/router.h"
#include "common/ascii.h"
#include "common/quote.h"

namespace hostport::agent::server {
namespace {

namespace http = boost::beast::http;

constexpr std::string_view kChunked = "chunked";

/// The list elements of every Transfer-Encoding field, in order, without OWS and without the
/// empty elements a list may hold (RFC 9110 §5.6.1); and the fields joined, for messages.
struct Codings {
  std::vector<std::string_view> names;  // parameters included: "chunked;x=1" is not chunked
  std::string joined;
  bool present = false;
};

std::string_view trimmed(std::string_view text) {
  while (!text.empty() && (text.front() == ' ' || text.front() == '\t')) text.remove_prefix(1);
  while (!text.empty() && (text.back() == ' ' || text.back() == '\t')) text.remove_suffix(1);
  return text;
}

Codings codingsOf(const http::request_header<>& header) {
  Codings codings;
  for (const auto& field : header) {
    if (field.name() != http::field::transfer_encoding) continue;
    const std::string_view value(field.value().data(), field.value().size());
    codings.present = true;
    codings.joined += (codings.joined.empty() ? "" : ", ") + std::string(value);
    std::size_t start = 0;
    while (start <= value.size()) {
      const auto comma = value.find(',', start);
      const auto end = comma == std::string_view::npos ? value.size() : comma;
      if (const auto element = trimmed(value.substr(start, end - start)); !element.empty()) {
        codings.names.push_back(element);
      }
      if (comma == std::string_view::npos) break;
      start = comma + 1;
    }
  }
  return codings;
}

bool isChunked(std::string_view coding) { return ascii::equalsIgnoreCase(coding, kChunked); }

api::HttpResponse badFraming(const Codings& codings, std::string_view rule) {
  return errorResponse(400, "bad_framing",
                       "Transfer-Encoding " + quoteText(codings.joined) + ": " + std::string(rule));
}

}  // namespace

std::optional<api::HttpResponse> framingRefusal(const http::request_header<>& header) {
  const Codings codings = codingsOf(header);
  if (!codings.present) return std::nullopt;
  if (header.version() < 11) {
    return badFraming(codings,
                      "an HTTP/1.0 request cannot be framed by a transfer coding "
                      "(RFC 9112 section 6.1)");
  }
  if (header.count(http::field::content_length) > 0) {
    return badFraming(codings,
                      "a request with both Transfer-Encoding and Content-Length is "
                      "refused (RFC 9112 section 6.3)");
  }
  if (codings.names.empty() || !isChunked(codings.names.back())) {
    return badFraming(codings,
                      "the last transfer coding must be chunked, or the length of the "
                      "body is unknown (RFC 9112 section 6.3)");
  }
  std::string others;
  for (std::size_t i = 0; i + 1 < codings.names.size(); ++i) {
    if (isChunked(codings.names[i])) {
      return badFraming(codings, "chunked may be applied only once (RFC 9112 section 6.1)");
    }
    others += (others.empty() ? "" : ", ") + std::string(codings.names[i]);
  }
  if (!others.empty()) {
    return errorResponse(501, "not_implemented",
                         "Transfer-Encoding " + quoteText(codings.joined) +
                             ": the agent decodes no transfer coding but chunked, not " +
                             quoteText(others) + " (RFC 9112 section 6.1)");
  }
  return std::nullopt;
}

}  // namespace hostport::agent::server
