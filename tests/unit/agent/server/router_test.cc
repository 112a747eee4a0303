// Router dispatch (agent/server/router.h): literal and {placeholder} segments, the method check,
// and the JSON error bodies for 404 and 405. Requests are plain values; no socket is involved.

#include "agent/server/router.h"

#include <gtest/gtest.h>

#include <map>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

namespace hostport::agent::server {
namespace {

using api::HttpResponse;

/// A request as the server builds it: segments already split and decoded.
HttpRequest request(std::string method, std::string path, std::vector<std::string> segments) {
  HttpRequest r;
  r.method = std::move(method);
  r.path = std::move(path);
  r.segments = std::move(segments);
  return r;
}

/// Dispatches and returns the one response, failing if the responder is called 0 or 2+ times.
HttpResponse dispatchOnce(const Router& router, const HttpRequest& r) {
  int calls = 0;
  HttpResponse response;
  router.dispatch(r, [&](HttpResponse answer) {
    ++calls;
    response = std::move(answer);
  });
  EXPECT_EQ(calls, 1) << "the responder must be called exactly once";
  return response;
}

/// A handler that records its params and answers 200 with `tag` as the body.
Router::Handler recording(std::string tag, std::optional<PathParams>& seen) {
  return [tag = std::move(tag), &seen](const HttpRequest&, const PathParams& params,
                                       Responder respond) {
    seen = params;
    respond({200, "text/plain", tag});
  };
}

nlohmann::json parsedBody(const HttpResponse& response) {
  return nlohmann::json::parse(response.body, nullptr, /*allow_exceptions=*/false);
}

class RouterTest : public ::testing::Test {
 protected:
  void SetUp() override {
    router_.add("GET", "/v1/attachments", recording("list", seen_));
    router_.add("POST", "/v1/attachments", recording("allocate", seen_));
    router_.add("GET", "/v1/attachments/{containerId}/{ifname}", recording("get", seen_));
    router_.add("DELETE", "/v1/attachments/{containerId}/{ifname}", recording("release", seen_));
    router_.add("GET", "/healthz", recording("healthz", seen_));
  }

  Router router_;
  std::optional<PathParams> seen_;
};

TEST_F(RouterTest, LiteralPathRunsItsHandlerWithNoParams) {
  const auto response = dispatchOnce(router_, request("GET", "/healthz", {"healthz"}));
  EXPECT_EQ(response.status, 200u);
  EXPECT_EQ(response.body, "healthz");
  ASSERT_TRUE(seen_.has_value());
  EXPECT_TRUE(seen_->empty());
}

TEST_F(RouterTest, MethodSelectsAmongRoutesOfOnePath) {
  EXPECT_EQ(dispatchOnce(router_, request("GET", "/v1/attachments", {"v1", "attachments"})).body,
            "list");
  EXPECT_EQ(dispatchOnce(router_, request("POST", "/v1/attachments", {"v1", "attachments"})).body,
            "allocate");
}

TEST_F(RouterTest, PlaceholdersBecomeParams) {
  const auto response = dispatchOnce(router_, request("DELETE", "/v1/attachments/abc123/eth0",
                                                      {"v1", "attachments", "abc123", "eth0"}));
  EXPECT_EQ(response.body, "release");
  ASSERT_TRUE(seen_.has_value());
  EXPECT_EQ(*seen_, (PathParams{{"containerId", "abc123"}, {"ifname", "eth0"}}));
}

TEST_F(RouterTest, ParamsHoldDecodedSegmentsVerbatim) {
  // The server decodes %2F and friends before routing; the router must not split or touch them.
  const std::string odd = "a/b?c%d e\xff";
  dispatchOnce(router_, request("GET", "/v1/attachments/x/y", {"v1", "attachments", odd, "{x}"}));
  ASSERT_TRUE(seen_.has_value());
  EXPECT_EQ(seen_->at("containerId"), odd);
  EXPECT_EQ(seen_->at("ifname"), "{x}");
}

TEST_F(RouterTest, UnknownPathIs404WithOurJsonBody) {
  const auto response = dispatchOnce(router_, request("GET", "/v1/nothing", {"v1", "nothing"}));
  EXPECT_EQ(response.status, 404u);
  EXPECT_EQ(response.contentType, "application/json");
  const auto body = parsedBody(response);
  ASSERT_TRUE(body.is_object()) << response.body;
  EXPECT_EQ(body, (nlohmann::json{{"code", "not_found"}, {"message", "no endpoint /v1/nothing"}}));
  EXPECT_FALSE(seen_.has_value());
}

TEST_F(RouterTest, SegmentCountMustMatch) {
  // A prefix or an extension of a known path is a different path.
  for (const auto& segments : std::vector<std::vector<std::string>>{
           {"v1"},
           {"v1", "attachments", "abc"},
           {"v1", "attachments", "abc", "eth0", "extra"},
           {"healthz", "x"},
       }) {
    const auto response = dispatchOnce(router_, request("GET", "/x", segments));
    EXPECT_EQ(response.status, 404u) << segments.size() << " segments";
  }
  EXPECT_FALSE(seen_.has_value());
}

TEST_F(RouterTest, RootIsUnknownUnlessRegistered) {
  EXPECT_EQ(dispatchOnce(router_, request("GET", "/", {})).status, 404u);
  router_.add("GET", "/", recording("root", seen_));
  EXPECT_EQ(dispatchOnce(router_, request("GET", "/", {})).body, "root");
}

TEST_F(RouterTest, KnownPathWithAnotherMethodIs405WithOurJsonBody) {
  const auto response =
      dispatchOnce(router_, request("PUT", "/v1/attachments", {"v1", "attachments"}));
  EXPECT_EQ(response.status, 405u);
  EXPECT_EQ(response.contentType, "application/json");
  const auto body = parsedBody(response);
  ASSERT_TRUE(body.is_object()) << response.body;
  EXPECT_EQ(body, (nlohmann::json{{"code", "method_not_allowed"},
                                  {"message", "PUT is not allowed on /v1/attachments"}}));
  EXPECT_FALSE(seen_.has_value());
}

TEST_F(RouterTest, PlaceholderPathWithAnotherMethodIs405) {
  const auto response = dispatchOnce(
      router_, request("POST", "/v1/attachments/a/b", {"v1", "attachments", "a", "b"}));
  EXPECT_EQ(response.status, 405u);
  EXPECT_EQ(parsedBody(response).value("code", ""), "method_not_allowed");
}

TEST_F(RouterTest, MethodsAreCaseSensitive) {
  // HTTP methods are case-sensitive tokens (RFC 9110 9.1): "get" is not GET.
  EXPECT_EQ(dispatchOnce(router_, request("get", "/healthz", {"healthz"})).status, 405u);
}

TEST_F(RouterTest, LaterRouteMatchesWhenAnEarlierOneHasTheWrongMethod) {
  Router router;
  std::optional<PathParams> seen;
  router.add("GET", "/items/{id}", recording("by-id", seen));
  router.add("POST", "/items/new", recording("create", seen));
  EXPECT_EQ(dispatchOnce(router, request("POST", "/items/new", {"items", "new"})).body, "create");
  EXPECT_EQ(dispatchOnce(router, request("GET", "/items/new", {"items", "new"})).body, "by-id");
  EXPECT_EQ(seen->at("id"), "new");
  EXPECT_EQ(dispatchOnce(router, request("DELETE", "/items/new", {"items", "new"})).status, 405u);
}

TEST_F(RouterTest, PatternsIgnoreRepeatedAndTrailingSlashes) {
  Router router;
  std::optional<PathParams> seen;
  router.add("GET", "//a///{b}/", recording("ab", seen));
  EXPECT_EQ(dispatchOnce(router, request("GET", "/a/x", {"a", "x"})).body, "ab");
  EXPECT_EQ(seen->at("b"), "x");
}

TEST_F(RouterTest, EmptyBracesAreALiteralSegment) {
  Router router;
  std::optional<PathParams> seen;
  router.add("GET", "/a/{}", recording("literal", seen));
  EXPECT_EQ(dispatchOnce(router, request("GET", "/a/x", {"a", "x"})).status, 404u);
  EXPECT_EQ(dispatchOnce(router, request("GET", "/a/{}", {"a", "{}"})).body, "literal");
}

TEST_F(RouterTest, HandlerMayAnswerLater) {
  // Handlers that wait for the journal keep the responder and call it from another thread.
  Router router;
  Responder kept;
  router.add("POST", "/slow", [&kept](const HttpRequest&, const PathParams&, Responder respond) {
    kept = std::move(respond);
  });
  std::optional<HttpResponse> got;
  router.dispatch(request("POST", "/slow", {"slow"}), [&got](HttpResponse r) { got = r; });
  EXPECT_FALSE(got.has_value());
  ASSERT_TRUE(kept);
  kept({201, "application/json", "{}"});
  ASSERT_TRUE(got.has_value());
  EXPECT_EQ(got->status, 201u);
}

TEST_F(RouterTest, ErrorBodyStaysValidJsonForHostilePaths) {
  // The path is echoed in the message: quotes, control bytes and broken UTF-8 must not break
  // the JSON (invalid UTF-8 becomes U+FFFD).
  const std::string path = "/\"}\n\x01\xff\xfe";
  const auto response = dispatchOnce(router_, request("GET", path, {"\"}\n\x01\xff\xfe"}));
  EXPECT_EQ(response.status, 404u);
  const auto body = parsedBody(response);
  ASSERT_TRUE(body.is_object()) << response.body;
  EXPECT_EQ(body.value("code", ""), "not_found");
  EXPECT_EQ(body.value("message", ""), "no endpoint /\"}\n\x01\xEF\xBF\xBD\xEF\xBF\xBD");
}

TEST(ErrorResponseTest, BuildsOurErrorDocument) {
  const auto response = errorResponse(409, "port_conflict", "port 30000 is taken");
  EXPECT_EQ(response.status, 409u);
  EXPECT_EQ(response.contentType, "application/json");
  EXPECT_EQ(nlohmann::json::parse(response.body),
            (nlohmann::json{{"code", "port_conflict"}, {"message", "port 30000 is taken"}}));
}

TEST(MakeRequestTest, KeepsThePathAsSentAndDecodesSegmentsAndQuery) {
  const auto made = makeRequest("GET", "/v1/attachments/a%2Fb/eth0?namespace=n%20s", "body");
  ASSERT_TRUE(made.has_value()) << made.error().message;
  EXPECT_EQ(made->method, "GET");
  EXPECT_EQ(made->path, "/v1/attachments/a%2Fb/eth0");
  EXPECT_EQ(made->segments, (std::vector<std::string>{"v1", "attachments", "a/b", "eth0"}));
  EXPECT_EQ(made->query, (std::map<std::string, std::string>{{"namespace", "n s"}}));
  EXPECT_EQ(made->body, "body");
  EXPECT_EQ(made->peer, nullptr);
}

TEST(MakeRequestTest, RefusesATargetTheSessionsAnswerWith400) {
  for (const char* target : {"v1/pools", "/v1//pools", "/v1/%zz", "/a?x=1&x=2"}) {
    const auto made = makeRequest("GET", target, "");
    ASSERT_FALSE(made.has_value()) << target;
    EXPECT_EQ(made.error().code, ErrorCode::kInvalidArgument) << target;
  }
}

}  // namespace
}  // namespace hostport::agent::server
