// hostport-admission's flags: the defaults, each refusal naming the flag and the value, and the
// pools read from the agents' own file by the agents' own reader.
#include "admission/admission_config.h"

#include <gtest/gtest.h>

#include <fstream>

#include "tests/support/result_assertions.h"
#include "tests/support/temp_dir.h"

namespace hostport::admission {
namespace {

class AdmissionConfigTest : public ::testing::Test {
 protected:
  void SetUp() override { write("pools:\n  games:\n    ranges: [\"30000-30999\"]\n"); }

  void write(const std::string& yaml) {
    std::ofstream(agentYaml_) << yaml;
    flags_["config"] = agentYaml_;
  }

  std::string refusal() {
    auto resolved = resolveAdmissionConfig(flags_);
    return resolved ? "resolved" : resolved.error().message;
  }

  test::TempDir dir_;
  std::string agentYaml_ = dir_.path() + "/agent.yaml";
  settings::FlagValues flags_;
};

TEST_F(AdmissionConfigTest, TakesTheDefaultsAndTheAgentsPools) {
  ASSERT_OK_AND_ASSIGN(const auto resolved, resolveAdmissionConfig(flags_));
  EXPECT_EQ(resolved.listen.str(), "0.0.0.0:8443");
  ASSERT_TRUE(resolved.metrics);
  EXPECT_EQ(resolved.metrics->str(), "0.0.0.0:9811");
  EXPECT_TRUE(resolved.settings.tlsCertFile.empty()) << "the server keeps its own";
  ASSERT_EQ(resolved.pools.size(), 1u);
  EXPECT_EQ(resolved.pools[0].name, "games");
}

TEST_F(AdmissionConfigTest, RefusesABadFlagNamingItAndTheValue) {
  flags_["listen"] = "8443";
  EXPECT_TRUE(refusal().starts_with("--listen: \"8443\"")) << refusal();
  flags_.erase("listen");
  flags_["namespace"] = "Hostport";
  EXPECT_TRUE(refusal().starts_with("--namespace: \"Hostport\"")) << refusal();
  flags_.erase("namespace");
  flags_["certificateCheckSeconds"] = "1";
  EXPECT_EQ(refusal(), "--certificate-check-interval: \"1\" is below 10");
  flags_.erase("certificateCheckSeconds");
  flags_["logLevel"] = "loud";
  EXPECT_TRUE(refusal().starts_with("--log-level: ")) << refusal();
  flags_.erase("logLevel");
  flags_["tlsCertFile"] = "/certs/tls.crt";
  EXPECT_TRUE(refusal().starts_with("--tls-cert-file and --tls-key-file go together")) << refusal();
  flags_["tlsKeyFile"] = "certs/tls.key";
  EXPECT_EQ(refusal(), "--tls-key-file: \"certs/tls.key\" must be an absolute path");
  flags_.erase("tlsCertFile");
  flags_.erase("tlsKeyFile");
  flags_["metricsAddress"] = "";
  ASSERT_OK_AND_ASSIGN(const auto off, resolveAdmissionConfig(flags_));
  EXPECT_FALSE(off.metrics);
}

TEST_F(AdmissionConfigTest, RefusesTheAgentsFileAsTheAgentsWould) {
  write("pools:\n  games:\n    ranges: [\"30000-29000\"]\n");
  EXPECT_TRUE(refusal().starts_with(agentYaml_ + ": pools.games.ranges[0]")) << refusal();
  flags_["config"] = dir_.path() + "/missing.yaml";
  EXPECT_EQ(refusal(), "--config: cannot read " + dir_.path() + "/missing.yaml");
}

}  // namespace
}  // namespace hostport::admission
