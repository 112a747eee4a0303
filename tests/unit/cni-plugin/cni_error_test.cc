// CNI error codes (cni-plugin/cni_error.h): what a refusal becomes on the plugin's stdout.

#include "cni-plugin/cni_error.h"

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "annotations/port_annotations.h"

namespace hostport::cni {
namespace {

TEST(CniErrorTest, AMalformedAnnotationIsCodeSeven) {
  const auto result =
      annotations::parsePortAnnotations(nlohmann::json{{"hostport.io/ports", "bad"}});
  ASSERT_FALSE(result.has_value());
  EXPECT_EQ(cniCode(result.error().code), kCniInvalidConfig);
  EXPECT_EQ(kCniInvalidConfig, 7);
}

TEST(CniErrorTest, PoolRulesRefusalsHaveTheirOwnCodes) {
  EXPECT_EQ(cniCode(ErrorCode::kNotAllowed), 7);
  EXPECT_EQ(cniCode(ErrorCode::kQuotaExceeded), 104);
  EXPECT_EQ(kCniQuotaExceeded, 104);
}

}  // namespace
}  // namespace hostport::cni
