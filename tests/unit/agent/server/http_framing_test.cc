// RFC 9112's framing rules that Beast leaves to the sessions: every Transfer-Encoding a request may
// carry, and what the agent answers it.

#include "agent/server/http_framing.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <string>
#include <vector>

namespace hostport::agent::server {
namespace {

namespace http = boost::beast::http;
using ::testing::HasSubstr;

struct FramingCase {
  std::vector<std::string> transferEncodings;  // one field each
  unsigned expected;                           // 0: served
  std::string why;
  unsigned version = 11;
  bool contentLength = false;
};

http::request_header<> headerOf(const FramingCase& framing) {
  http::request_header<> header;
  header.method(http::verb::post);
  header.target("/v1/gc");
  header.version(framing.version);
  for (const auto& value : framing.transferEncodings) {
    header.insert(http::field::transfer_encoding, value);
  }
  if (framing.contentLength) header.set(http::field::content_length, "2");
  return header;
}

TEST(HttpFramingTest, AnswersEachTransferEncodingAsRfc9112Says) {
  const std::vector<FramingCase> cases = {
      {{}, 0, "no transfer coding: Content-Length or no body"},
      {{"chunked"}, 0, "chunked"},
      {{"Chunked"}, 0, "coding names are case-insensitive"},
      {{" chunked\t"}, 0, "OWS around the element"},
      {{"chunked ,"}, 0, "empty list elements are ignored"},
      {{"xchunked"}, 400, "an unknown coding last: the body's length is unknown"},
      {{"chunked, identity"}, 400, "chunked not last"},
      {{"identity"}, 400, "identity is no longer a coding, and not chunked"},
      {{"gzip"}, 400, "a compression coding alone: no framing"},
      {{"chunked;x=1"}, 400, "chunked with parameters is not the chunked we know"},
      {{""}, 400, "an empty field names no coding"},
      {{","}, 400, "a field of empty elements names no coding"},
      {{"chunked", "identity"}, 400, "two fields are one list: chunked not last"},
      {{"chunked, chunked"}, 400, "chunked twice"},
      {{"chunked", "chunked"}, 400, "chunked twice, in two fields"},
      {{"chunked"}, 400, "with Content-Length", 11, true},
      {{"chunked"}, 400, "from an HTTP/1.0 request", 10},
      {{"gzip, chunked"}, 501, "a coding before chunked that we do not decode"},
      {{"identity", "chunked"}, 501, "two fields, an unknown coding first"},
  };
  for (const auto& framing : cases) {
    const auto refusal = framingRefusal(headerOf(framing));
    if (framing.expected == 0) {
      EXPECT_FALSE(refusal.has_value()) << framing.why << ": " << refusal->body;
      continue;
    }
    ASSERT_TRUE(refusal.has_value()) << framing.why;
    EXPECT_EQ(refusal->status, framing.expected) << framing.why << ": " << refusal->body;
    EXPECT_THAT(refusal->body, HasSubstr("RFC 9112")) << framing.why;
    EXPECT_THAT(refusal->body, HasSubstr("Transfer-Encoding")) << framing.why;
  }
}

TEST(HttpFramingTest, NamesTheFieldTheRuleAndTheCodingItDoesNotKnow) {
  const auto unknown = framingRefusal(headerOf({{"gzip, chunked"}, 501, ""}));
  ASSERT_TRUE(unknown.has_value());
  EXPECT_EQ(unknown->body,
            R"j({"code":"not_implemented","message":"Transfer-Encoding \"gzip, chunked\": the )j"
            R"j(agent decodes no transfer coding but chunked, not \"gzip\" (RFC 9112 section )j"
            R"j(6.1)"})j");
  const auto last = framingRefusal(headerOf({{"xchunked"}, 400, ""}));
  ASSERT_TRUE(last.has_value());
  EXPECT_EQ(last->body,
            R"j({"code":"bad_framing","message":"Transfer-Encoding \"xchunked\": the last )j"
            R"j(transfer coding must be chunked, or the length of the body is unknown (RFC 9112 )j"
            R"j(section 6.3)"})j");
}

}  // namespace
}  // namespace hostport::agent::server
