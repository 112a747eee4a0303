#include "agent/api/http_errors.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <set>

namespace hostport::agent::api {
namespace {

using ::testing::HasSubstr;

constexpr ErrorCode kAllCodes[] = {
    ErrorCode::kInvalidArgument,
    ErrorCode::kInvalidEnvironment,
    ErrorCode::kIncompatibleVersion,
    ErrorCode::kDecode,
    ErrorCode::kNotFound,
    ErrorCode::kConflict,
    ErrorCode::kExhausted,
    ErrorCode::kNotAllowed,
    ErrorCode::kQuotaExceeded,
    ErrorCode::kUnavailable,
    ErrorCode::kKernel,
    ErrorCode::kIo,
    ErrorCode::kInternal,
};

TEST(HttpErrorsTest, MapsTheDocumentedCodes) {
  const std::vector<std::tuple<ErrorCode, unsigned, std::string_view>> table = {
      {ErrorCode::kInvalidArgument, 400, "invalid_argument"},
      {ErrorCode::kNotFound, 404, "not_found"},
      {ErrorCode::kConflict, 409, "port_conflict"},
      {ErrorCode::kExhausted, 409, "pool_exhausted"},
      {ErrorCode::kNotAllowed, 403, "not_allowed"},
      {ErrorCode::kQuotaExceeded, 409, "quota_exceeded"},
      {ErrorCode::kUnavailable, 503, "unavailable"},
      {ErrorCode::kIo, 500, "io_error"},
      {ErrorCode::kKernel, 500, "kernel_error"},
      {ErrorCode::kInternal, 500, "internal"},
      {ErrorCode::kDecode, 400, "malformed_request"},
  };
  for (const auto& [code, status, machine] : table) {
    EXPECT_EQ(httpStatus(code), status) << machine;
    EXPECT_EQ(machineCode(code), machine);
  }
}

TEST(HttpErrorsTest, EveryCodeSurvivesTheSocket) {
  std::set<std::string_view> machines;
  for (const ErrorCode code : kAllCodes) {
    EXPECT_TRUE(machines.insert(machineCode(code)).second) << "duplicate " << machineCode(code);
    const Error sent{code, "pool \"fast\" has no free port", "size 10"};
    const Error received = errorFromBody(httpStatus(code), errorBody(sent).dump());
    EXPECT_EQ(received.code, code) << machineCode(code);
    EXPECT_EQ(received.message, sent.message);
    EXPECT_EQ(received.details, sent.details);
  }
}

TEST(HttpErrorsTest, WritesDetailsOnlyWhenPresent) {
  EXPECT_EQ(errorBody(Error{ErrorCode::kConflict, "busy", ""}),
            nlohmann::json::parse(R"({"code": "port_conflict", "message": "busy"})"));
}

TEST(HttpErrorsTest, FallsBackOnTheStatusForUnknownCodes) {
  EXPECT_EQ(errorCodeFor("brand_new_code", 400), ErrorCode::kInvalidArgument);
  EXPECT_EQ(errorCodeFor("brand_new_code", 403), ErrorCode::kNotAllowed);
  EXPECT_EQ(errorCodeFor("brand_new_code", 404), ErrorCode::kNotFound);
  EXPECT_EQ(errorCodeFor("brand_new_code", 409), ErrorCode::kConflict);
  EXPECT_EQ(errorCodeFor("", 503), ErrorCode::kUnavailable);
  EXPECT_EQ(errorCodeFor("", 500), ErrorCode::kInternal);
  EXPECT_EQ(errorCodeFor("", 418), ErrorCode::kInternal);
  // The sessions' own refusal of a request over the size limit.
  EXPECT_EQ(errorCodeFor("too_large", 413), ErrorCode::kInvalidArgument);
  EXPECT_EQ(errorCodeFor("pool_exhausted", 500), ErrorCode::kExhausted) << "the code wins";
}

TEST(HttpErrorsTest, ReadsBodiesThatAreNotOurs) {
  const Error html = errorFromBody(502, "<html>Bad \"Gateway\"\n</html>");
  EXPECT_EQ(html.code, ErrorCode::kInternal);
  EXPECT_EQ(html.message, "HTTP status 502, body \"<html>Bad \\\"Gateway\\\"\\n</html>\"");

  const Error empty = errorFromBody(503, "");
  EXPECT_EQ(empty.code, ErrorCode::kUnavailable);
  EXPECT_EQ(empty.message, "HTTP status 503");

  const Error wrongTypes = errorFromBody(409, R"({"code": 5, "message": ["x"]})");
  EXPECT_EQ(wrongTypes.code, ErrorCode::kConflict);
  EXPECT_THAT(wrongTypes.message, HasSubstr("HTTP status 409"));

  const Error huge = errorFromBody(400, std::string(1 << 20, 'x'));
  EXPECT_LT(huge.message.size(), 200u);
}

}  // namespace
}  // namespace hostport::agent::api
