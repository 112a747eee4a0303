// The API client against the fake Kubernetes API server (tests/fakes/fake_kube_apiserver.h) on
// this process's loopback: TLS verified against the cluster CA, one kept-alive connection, a
// rotated token file, client certificates, retries of 429 (after Retry-After), 5xx and dropped
// connections, and deadlines. Waits are recorded, not slept.

#include "kube/kube_client.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <fstream>

#include "tests/fakes/fake_kube_apiserver.h"
#include "tests/support/result_assertions.h"
#include "tests/support/temp_dir.h"

namespace hostport::kube {
namespace {

using namespace std::chrono_literals;
using ::testing::HasSubstr;

/// The defaults with `attempts` and `timeout`.
KubeClientOptions optionsWith(int attempts, std::chrono::milliseconds timeout = 10s) {
  KubeClientOptions options;
  options.maxAttempts = attempts;
  options.timeout = timeout;
  return options;
}

class KubeClientTest : public ::testing::Test {
 protected:
  void SetUp() override {
    auto started = FakeKubeApiServer::start();
    ASSERT_OK(started);
    api_ = std::move(*started);
    api_->putPod("games", "gs-0", "u-1");
  }

  std::unique_ptr<KubeClient> client(FakeKubeconfigOptions kubeconfig = {},
                                     KubeClientOptions options = {}) {
    auto path = api_->writeKubeconfig(dir_.path(), kubeconfig);
    EXPECT_OK(path);
    auto config = loadKubeconfig(path->string());
    EXPECT_OK(config);
    auto made = KubeClient::create(*config, options, [this](KubeClient::Clock::time_point until) {
      waits_.push_back(until - KubeClient::Clock::now());
      return true;
    });
    EXPECT_OK(made);
    return made ? std::move(*made) : nullptr;
  }

  static ApiRequest getPod() { return {"GET", "/api/v1/namespaces/games/pods/gs-0", "", ""}; }

  std::unique_ptr<FakeKubeApiServer> api_;
  test::TempDir dir_;
  std::vector<KubeClient::Clock::duration> waits_;
};

TEST_F(KubeClientTest, KeepsOneVerifiedConnectionAndFollowsARotatedTokenFile) {
  auto kube = client({.credentials = FakeKubeconfigOptions::Credentials::kTokenFile});
  ASSERT_NE(kube, nullptr);
  for (int i = 0; i < 3; ++i) {
    auto response = kube->send(getPod());
    ASSERT_OK(response);
    EXPECT_EQ(response->status, 200) << response->body;
  }
  EXPECT_EQ(api_->connectionsAccepted(), 1u);
  // The kubelet rotates the projected token: the old one stops working, the file changes.
  api_->setToken("rotated");
  std::ofstream(dir_ / "token.new") << "rotated\n";
  std::filesystem::rename(dir_ / "token.new", dir_ / "token");
  auto after = kube->send(getPod());
  ASSERT_OK(after);
  EXPECT_EQ(after->status, 200) << after->body;
  EXPECT_EQ(api_->requests().back().bearerToken, "rotated");
}

TEST_F(KubeClientTest, AuthenticatesWithAClientCertificate) {
  auto kube = client({.credentials = FakeKubeconfigOptions::Credentials::kClientCertificate});
  ASSERT_NE(kube, nullptr);
  auto response = kube->send(getPod());
  ASSERT_OK(response);
  EXPECT_EQ(response->status, 200);
  EXPECT_FALSE(api_->requests().back().clientCertificate.empty());
}

TEST_F(KubeClientTest, RetriesA429AfterItsRetryAfterThenA500ThenADroppedConnection) {
  api_->injectFault(FakeKubeFault::answer(429, 2));
  api_->injectFault(FakeKubeFault::answer(500));
  api_->injectFault(FakeKubeFault::dropConnection());
  auto kube = client();
  ASSERT_NE(kube, nullptr);
  auto response =
      kube->send({"PATCH", "/api/v1/namespaces/games/pods/gs-0", "application/merge-patch+json",
                  R"({"metadata":{"annotations":{"a":"b"}}})"});
  ASSERT_OK(response);
  EXPECT_EQ(response->status, 200) << response->body;
  EXPECT_EQ(response->attempts, 4);
  // A wait before each attempt (the rate limiter's, none needed) and before each retry (backoff):
  // the one after the 429 at least its Retry-After.
  std::vector<KubeClient::Clock::duration> backoffs;
  for (const auto wait : waits_) {
    if (wait > 0ms) backoffs.push_back(wait);
  }
  ASSERT_FALSE(backoffs.empty());
  EXPECT_GE(backoffs.front(), 1900ms);
  prometheus::TextWriter metrics;
  kube->writeMetrics(metrics);
  EXPECT_THAT(metrics.text(), HasSubstr("hostport_kube_retries_total 3"));
  EXPECT_EQ(
      api_->object("/api/v1/namespaces/games/pods/gs-0")->at("metadata").at("annotations").at("a"),
      "b");
}

TEST_F(KubeClientTest, GivesUpAfterMaxAttemptsWithTheLastAnswer) {
  api_->injectFault(FakeKubeFault::answer(503).repeated(10));
  auto kube = client({}, optionsWith(3));
  ASSERT_NE(kube, nullptr);
  auto response = kube->send(getPod());
  ASSERT_OK(response);
  EXPECT_EQ(response->status, 503);
  EXPECT_EQ(response->attempts, 3);
}

TEST_F(KubeClientTest, ASlowAnswerMissesItsDeadline) {
  api_->injectFault(FakeKubeFault::slow(5s));
  auto kube = client({}, optionsWith(1, 300ms));
  ASSERT_NE(kube, nullptr);
  auto response = kube->send(getPod());
  ASSERT_FALSE(response);
  EXPECT_EQ(response.error().code, ErrorCode::kUnavailable);
}

TEST_F(KubeClientTest, AServerItsCaDidNotSignIsRefused) {
  auto path = api_->writeKubeconfig(dir_.path());
  ASSERT_OK(path);
  auto config = loadKubeconfig(path->string());
  ASSERT_OK(config);
  auto other =
      tls::CertificateAuthority::create("another CA", tls::Validity{std::chrono::hours(24)});
  ASSERT_OK(other);
  config->caPem = other->certificatePem();
  auto kube = KubeClient::create(*config, optionsWith(1), [](auto) { return true; });
  ASSERT_OK(kube);
  auto response = (*kube)->send(getPod());
  ASSERT_FALSE(response);
  EXPECT_EQ(response.error().code, ErrorCode::kUnavailable);
  EXPECT_THAT(response.error().message, HasSubstr("certificate verify failed"));
  EXPECT_TRUE(api_->requests().empty()) << "nothing is sent to an unverified server";
}

}  // namespace
}  // namespace hostport::kube
