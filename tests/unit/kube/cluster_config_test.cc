#include "kube/cluster_config.h"

#include <gtest/gtest.h>

#include <fstream>
#include <map>

#include "tests/support/result_assertions.h"
#include "tests/support/temp_dir.h"

namespace hostport::kube {
namespace {

void write(const std::filesystem::path& path, const std::string& text) {
  std::ofstream(path) << text;
}

Getenv envOf(std::map<std::string, std::string> values) {
  return [values = std::move(values)](const char* name) -> const char* {
    const auto found = values.find(name);
    return found == values.end() ? nullptr : found->second.c_str();
  };
}

TEST(ClusterConfigTest, OutsideAPodThereIsNoInClusterConfig) {
  auto config = inClusterConfig(envOf({}), "/nonexistent");
  ASSERT_OK(config);
  EXPECT_FALSE(config->has_value());
}

TEST(ClusterConfigTest, InAPodReadsTheServiceAccount) {
  test::TempDir dir;
  write(dir / "ca.crt", "CA PEM");
  write(dir / "token", "t0\n");
  auto config = inClusterConfig(
      envOf({{"KUBERNETES_SERVICE_HOST", "10.96.0.1"}, {"KUBERNETES_SERVICE_PORT", "443"}}),
      dir.path());
  ASSERT_OK(config);
  ASSERT_TRUE(config->has_value());
  EXPECT_EQ((*config)->server(), "https://10.96.0.1:443");
  EXPECT_EQ((*config)->caPem, "CA PEM");
  EXPECT_EQ((*config)->credentials.tokenFile, (dir / "token").string());
  EXPECT_EQ((*config)->source, "in-cluster");
}

TEST(ClusterConfigTest, AnIpv6ServiceHostIsBracketed) {
  test::TempDir dir;
  write(dir / "ca.crt", "CA");
  write(dir / "token", "t");
  auto config = inClusterConfig(
      envOf({{"KUBERNETES_SERVICE_HOST", "fd00::1"}, {"KUBERNETES_SERVICE_PORT", "6443"}}),
      dir.path());
  ASSERT_OK(config);
  EXPECT_EQ((*config)->host, "fd00::1");
  EXPECT_EQ((*config)->server(), "https://[fd00::1]:6443");
}

TEST(ClusterConfigTest, InAPodWithoutTheTokenIsAnErrorNamingTheFile) {
  test::TempDir dir;
  write(dir / "ca.crt", "CA");
  auto config = inClusterConfig(envOf({{"KUBERNETES_SERVICE_HOST", "10.96.0.1"}}), dir.path());
  ASSERT_FALSE(config);
  EXPECT_NE(config.error().message.find("token"), std::string::npos) << config.error().message;
}

constexpr const char* kKubeconfig = R"(apiVersion: v1
kind: Config
current-context: agent
contexts:
- name: other
  context: {cluster: nowhere, user: nobody}
- name: agent
  context: {cluster: test, user: hostport}
clusters:
- name: test
  cluster:
    server: https://127.0.0.1:6443
    certificate-authority-data: Q0EgUEVN
    tls-server-name: kubernetes.default.svc
users:
- name: hostport
  user:
    tokenFile: token
)";

TEST(ClusterConfigTest, AKubeconfigGivesItsCurrentContext) {
  test::TempDir dir;
  auto config = parseKubeconfig(kKubeconfig, (dir / "kubeconfig").string());
  ASSERT_OK(config);
  EXPECT_EQ(config->host, "127.0.0.1");
  EXPECT_EQ(config->port, 6443);
  EXPECT_EQ(config->caPem, "CA PEM");  // base64 of it in the file
  EXPECT_EQ(config->tlsServerName, "kubernetes.default.svc");
  EXPECT_EQ(config->credentials.tokenFile, (dir / "token").string()) << "relative to the file";
}

TEST(ClusterConfigTest, AKubeconfigReadsFilesRelativeToItself) {
  test::TempDir dir;
  write(dir / "ca.pem", "FILE CA");
  write(dir / "client.pem", "CERT");
  write(dir / "client.key", "KEY");
  write(dir / "kubeconfig", R"(current-context: c
contexts: [{name: c, context: {cluster: k, user: u}}]
clusters: [{name: k, cluster: {server: "https://[::1]", certificate-authority: ca.pem}}]
users: [{name: u, user: {client-certificate: client.pem, client-key: client.key}}]
)");
  auto config = loadKubeconfig((dir / "kubeconfig").string());
  ASSERT_OK(config);
  EXPECT_EQ(config->host, "::1");
  EXPECT_EQ(config->port, 443);
  EXPECT_EQ(config->caPem, "FILE CA");
  EXPECT_EQ(config->credentials.clientCertificatePem, "CERT");
  EXPECT_EQ(config->credentials.clientKeyPem, "KEY");
}

TEST(ClusterConfigTest, RefusesWhatItCannotHonourNamingTheKey) {
  const std::string base = R"(current-context: c
contexts: [{name: c, context: {cluster: k, user: u}}]
)";
  const std::map<std::string, std::string> cases = {
      {"clusters: [{name: k, cluster: {server: \"http://x\"}}]\nusers: [{name: u, user: {token: "
       "t}}]",
       "https://"},
      {"clusters: [{name: k, cluster: {server: \"https://x\", insecure-skip-tls-verify: true}}]\n"
       "users: [{name: u, user: {token: t}}]",
       "insecure-skip-tls-verify"},
      {"clusters: [{name: k, cluster: {server: \"https://x\"}}]\n"
       "users: [{name: u, user: {exec: {command: aws}}}]",
       "exec"},
      {"clusters: [{name: k, cluster: {server: \"https://x\"}}]\nusers: [{name: u, user: {}}]",
       "no token"},
      {"clusters: [{name: k, cluster: {server: \"https://x:99999\"}}]\n"
       "users: [{name: u, user: {token: t}}]",
       "invalid port"},
      {"clusters: []\nusers: [{name: u, user: {token: t}}]", "no cluster named \"k\""},
  };
  for (const auto& [rest, expected] : cases) {
    auto config = parseKubeconfig(base + rest, "/kubeconfig");
    ASSERT_FALSE(config) << rest;
    EXPECT_EQ(config.error().code, ErrorCode::kInvalidArgument) << rest;
    EXPECT_NE(config.error().message.find(expected), std::string::npos)
        << config.error().message << " for " << rest;
  }
}

}  // namespace
}  // namespace hostport::kube
