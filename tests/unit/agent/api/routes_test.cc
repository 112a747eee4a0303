#include "agent/api/routes.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

namespace hostport::agent::api {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;

TEST(RoutesTest, BuildsTargets) {
  EXPECT_EQ(attachmentTarget({"abc123", "eth0"}), "/v1/attachments/abc123/eth0");
  EXPECT_EQ(attachmentTarget({"abc", "e%?#1"}), "/v1/attachments/abc/e%25%3F%231");
  EXPECT_EQ(listTarget("", ""), "/v1/attachments");
  EXPECT_EQ(listTarget("games", ""), "/v1/attachments?namespace=games");
  EXPECT_EQ(listTarget("games", "web-0"), "/v1/attachments?namespace=games&pod=web-0");
  EXPECT_EQ(listTarget("", "a&b"), "/v1/attachments?pod=a%26b");
  EXPECT_EQ(containerTarget("abc"), "/v1/attachments?containerId=abc");
}

TEST(RoutesTest, ParsesWhatItBuilds) {
  const auto target = parseTarget(attachmentTarget({"abc", "e%?#/1"}));
  ASSERT_TRUE(target.has_value()) << target.error().message;
  EXPECT_THAT(target->segments, ElementsAre("v1", "attachments", "abc", "e%?#/1"));
  EXPECT_TRUE(target->query.empty());

  const auto list = parseTarget(listTarget("games", "a&b=c"));
  ASSERT_TRUE(list.has_value());
  EXPECT_THAT(list->segments, ElementsAre("v1", "attachments"));
  EXPECT_EQ(list->query.at("namespace"), "games");
  EXPECT_EQ(list->query.at("pod"), "a&b=c");
}

TEST(RoutesTest, ParsesRootQueriesAndEmptyValues) {
  EXPECT_TRUE(parseTarget("/").value().segments.empty());
  const auto target = parseTarget("/metrics?&flag&x=");
  ASSERT_TRUE(target.has_value());
  EXPECT_THAT(target->segments, ElementsAre("metrics"));
  EXPECT_EQ(target->query.at("flag"), "");
  EXPECT_EQ(target->query.at("x"), "");
}

TEST(RoutesTest, RejectsMalformedTargets) {
  const std::vector<std::pair<std::string, std::string>> cases = {
      {"", "must be a path"},
      {"v1/gc", "must be a path"},
      {"http://x/v1/gc", "must be a path"},
      {"/" + std::string(kMaxTargetLength, 'a'), "must be a path of at most 2048"},
      {"/v1//gc", "empty path segment"},
      {"/v1/gc/", "empty path segment"},
      {"/v1/%zz", "bad percent-escape"},
      {"/v1?a=%", "bad percent-escape"},
      {"/v1?pod=a&pod=b", "repeats query parameter \"pod\""},
  };
  for (const auto& [target, problem] : cases) {
    const auto parsed = parseTarget(target);
    ASSERT_FALSE(parsed.has_value()) << target;
    EXPECT_EQ(parsed.error().code, ErrorCode::kInvalidArgument);
    EXPECT_THAT(parsed.error().message, HasSubstr(problem)) << target;
  }
}

}  // namespace
}  // namespace hostport::agent::api
