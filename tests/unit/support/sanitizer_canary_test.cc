// The sanitizer stage's own check (scripts/test.sh, issue 22): a stage that lets a real finding
// pass, or reports it without file:line, is worse than none. Run by hand, once per change to the
// stage or its setup:
//   HOSTPORT_PLANT_SANITIZER_FINDING=1 sudo -E scripts/test.sh -R SanitizerCanary
// must fail the stage with ASan's heap-buffer-overflow report and a symbolized stack that names
// this file. Without the variable the read stays in bounds.

#include <gtest/gtest.h>

#include <cstddef>
#include <cstdlib>
#include <memory>
#include <string_view>

namespace hostport::test {
namespace {

constexpr std::size_t kValues = 4;

bool findingPlanted() {
  const char* planted = std::getenv("HOSTPORT_PLANT_SANITIZER_FINDING");
  return planted != nullptr && std::string_view(planted) == "1";
}

TEST(SanitizerCanaryTest, ReadsTheLastElementOrOnePastItWhenAFindingIsPlanted) {
  auto values = std::make_unique<int[]>(kValues);
  for (std::size_t i = 0; i < kValues; ++i) values[i] = static_cast<int>(i * i);
  // volatile: the compiler cannot prove the index and drop or fold the read.
  const volatile std::size_t index = findingPlanted() ? kValues : kValues - 1;
  EXPECT_EQ(values[index], 9);
}

}  // namespace
}  // namespace hostport::test
