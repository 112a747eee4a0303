#pragma once
// GoogleTest assertions for Result<T> (common/error.h): on failure they print the expression and
// the error's message, and, like every gtest assertion, take more context through `<<`.
//
//   ASSERT_OK(netns.run(fn)) << "while setting up";
//   EXPECT_OK(table.flush());
//   ASSERT_OK_AND_ASSIGN(auto lease, client.allocate(request));

#include <gtest/gtest.h>

#include <utility>

namespace hostport::test {

/// The predicate-formatter behind ASSERT_OK/EXPECT_OK: success when `result` holds a value.
template <typename R>
::testing::AssertionResult resultIsOk(const char* expression, const R& result) {
  if (result.has_value()) return ::testing::AssertionSuccess();
  return ::testing::AssertionFailure() << expression << " failed: " << result.error().message;
}

}  // namespace hostport::test

#define ASSERT_OK(expr) ASSERT_PRED_FORMAT1(::hostport::test::resultIsOk, expr)
#define EXPECT_OK(expr) EXPECT_PRED_FORMAT1(::hostport::test::resultIsOk, expr)

#define HPT_CONCAT_INNER(a, b) a##b
#define HPT_CONCAT(a, b) HPT_CONCAT_INNER(a, b)

/// `ASSERT_OK_AND_ASSIGN(auto x, f())`: declares x from the value, or fails the test.
#define ASSERT_OK_AND_ASSIGN(lhs, expr) \
  ASSERT_OK_AND_ASSIGN_IMPL(HPT_CONCAT(hpt_result_, __LINE__), lhs, expr)
#define ASSERT_OK_AND_ASSIGN_IMPL(tmp, lhs, expr)                       \
  auto tmp = (expr);                                                    \
  ASSERT_TRUE(tmp.has_value()) << #expr << ": " << tmp.error().message; \
  lhs = std::move(*tmp)
