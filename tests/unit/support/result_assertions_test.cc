#include "tests/support/result_assertions.h"

#include <gtest/gtest-spi.h>
#include <gtest/gtest.h>

#include "common/error.h"

namespace hostport::test {
namespace {

Result<int> diskOnFire() { return fail(ErrorCode::kIo, "disk on fire"); }
Result<void> flushed() { return {}; }

TEST(ResultAssertionsTest, PassOnAValue) {
  ASSERT_OK(Result<int>(7));
  EXPECT_OK(flushed());
  ASSERT_OK_AND_ASSIGN(const int value, Result<int>(7));
  EXPECT_EQ(value, 7);
}

TEST(ResultAssertionsTest, AssertOkFailsFatallyNamingTheExpressionAndTheErrorMessage) {
  EXPECT_FATAL_FAILURE(ASSERT_OK(diskOnFire()), "diskOnFire() failed: disk on fire");
}

TEST(ResultAssertionsTest, ExpectOkFailsWithoutStoppingTheTestAndTakesMoreContext) {
  EXPECT_NONFATAL_FAILURE(EXPECT_OK(diskOnFire()) << "while saving", "disk on fire");
  EXPECT_NONFATAL_FAILURE(EXPECT_OK(diskOnFire()) << "while saving", "while saving");
}

TEST(ResultAssertionsTest, AssertOkAndAssignFailsFatallyNamingTheExpressionAndTheErrorMessage) {
  EXPECT_FATAL_FAILURE(
      [] {
        ASSERT_OK_AND_ASSIGN(const int value, diskOnFire());
        (void)value;
      }(),
      "diskOnFire(): disk on fire");
}

}  // namespace
}  // namespace hostport::test
