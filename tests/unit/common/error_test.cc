#include "common/error.h"

#include <gtest/gtest.h>

#include <memory>
#include <string>

namespace hostport {
namespace {

Result<int> parsePositive(int value) {
  if (value <= 0) return fail(ErrorCode::kInvalidArgument, "not positive");
  return value;
}

Result<int> doubled(int value) {
  HOSTPORT_TRY(const int parsed, parsePositive(value));
  return parsed * 2;
}

Result<int> sumOfTwo(int a, int b) {
  int total = 0;
  HOSTPORT_TRY(total, parsePositive(a));
  HOSTPORT_TRY(const int second, parsePositive(b));
  return total + second;
}

Result<void> bothPositive(int a, int b) {
  HOSTPORT_TRY_VOID(parsePositive(a));
  HOSTPORT_TRY_VOID(parsePositive(b));
  return {};
}

Result<std::unique_ptr<int>> boxed(int value) {
  if (value < 0) return fail(ErrorCode::kNotFound, "negative");
  return std::make_unique<int>(value);
}

Result<int> unboxed(int value) {
  HOSTPORT_TRY(auto box, boxed(value));  // move-only values are moved out
  return *box;
}

TEST(ErrorTest, TryDeclaresTheValueOfASuccess) {
  ASSERT_TRUE(doubled(21));
  EXPECT_EQ(*doubled(21), 42);
  EXPECT_EQ(*sumOfTwo(2, 3), 5);
  EXPECT_EQ(*unboxed(7), 7);
}

TEST(ErrorTest, TryReturnsTheErrorUnchanged) {
  const auto failed = sumOfTwo(2, -3);
  ASSERT_FALSE(failed);
  EXPECT_EQ(failed.error().code, ErrorCode::kInvalidArgument);
  EXPECT_EQ(failed.error().message, "not positive");
  EXPECT_EQ(unboxed(-1).error().code, ErrorCode::kNotFound);
}

TEST(ErrorTest, TryVoidStopsAtTheFirstError) {
  EXPECT_TRUE(bothPositive(1, 2));
  const auto failed = bothPositive(1, 0);
  ASSERT_FALSE(failed);
  EXPECT_EQ(failed.error().message, "not positive");
}

TEST(ErrorTest, WithContextKeepsTheCode) {
  const auto error = withContext(Error{ErrorCode::kIo, "disk full", {}}, "writing the journal");
  EXPECT_EQ(error.error().code, ErrorCode::kIo);
  EXPECT_EQ(error.error().message, "writing the journal: disk full");
}

}  // namespace
}  // namespace hostport
