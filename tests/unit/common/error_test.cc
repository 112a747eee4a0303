#include "common/error.h"

#include <gtest/gtest.h>

#include <cerrno>
#include <cstring>
#include <memory>
#include <string>
#include <system_error>

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

TEST(ErrorTest, SystemErrorNamesTheCallAndCarriesTheErrnoAsItsCause) {
  const Error error = systemError(ErrorCode::kIo, "open /var/lib/hostport", ENOENT);
  EXPECT_EQ(error.code, ErrorCode::kIo);
  EXPECT_EQ(error.message, "open /var/lib/hostport: " + std::string(std::strerror(ENOENT)));
  EXPECT_EQ(error.cause, std::errc::no_such_file_or_directory);
  EXPECT_EQ(error.cause.category(), std::generic_category());
  EXPECT_TRUE(error.details.empty());
}

TEST(ErrorTest, FailSystemIsTheFailedResultOfSystemError) {
  const Result<int> failed = failSystem(ErrorCode::kKernel, "adding set elements", EEXIST);
  ASSERT_FALSE(failed);
  EXPECT_EQ(failed.error().code, ErrorCode::kKernel);
  EXPECT_EQ(failed.error().message, "adding set elements: " + std::string(std::strerror(EEXIST)));
  EXPECT_EQ(failed.error().cause, std::errc::file_exists);
}

TEST(ErrorTest, AnErrorWithoutASystemCauseHasAnEmptyCause) {
  const auto error = fail(ErrorCode::kInvalidArgument, "bad port");
  EXPECT_FALSE(error.error().cause);
  EXPECT_NE(error.error().cause, std::errc::no_such_file_or_directory);
}

TEST(ErrorTest, WithContextAndTryKeepTheCause) {
  const auto inner = [] { return Result<void>(failSystem(ErrorCode::kKernel, "dump", ENOENT)); };
  const auto outer = [&]() -> Result<void> {
    HOSTPORT_TRY_VOID(inner());
    return {};
  };
  const auto passed = outer();
  ASSERT_FALSE(passed);
  EXPECT_EQ(passed.error().cause, std::errc::no_such_file_or_directory);
  const auto annotated = withContext(passed.error(), "reading the table");
  EXPECT_EQ(annotated.error().cause, std::errc::no_such_file_or_directory);
  EXPECT_EQ(annotated.error().message,
            "reading the table: dump: " + std::string(std::strerror(ENOENT)));
}

}  // namespace
}  // namespace hostport
