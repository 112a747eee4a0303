// The certificate keeper against the fake API server (the real protocol: 201/409 on create, 409
// on a stale resourceVersion, JSON patch with test): a first pass makes and stores the
// certificates and makes both webhook configurations trust the CA; later passes change nothing;
// replicas racing for an empty Secret end on one CA; an expiring certificate is renewed by the
// same CA.
#include "admission/certificate_keeper.h"

#include <gtest/gtest.h>

#include <thread>

#include "kube/base64.h"
#include "kube/cluster_config.h"
#include "tests/fakes/fake_kube_apiserver.h"
#include "tests/support/result_assertions.h"
#include "tests/support/temp_dir.h"

namespace hostport::admission {
namespace {

using nlohmann::json;
using std::chrono::hours;

constexpr std::string_view kSecret = "/api/v1/namespaces/hostport/secrets/hostport-admission-tls";
constexpr std::string_view kValidating =
    "/apis/admissionregistration.k8s.io/v1/validatingwebhookconfigurations/hostport-admission";
constexpr std::string_view kMutating =
    "/apis/admissionregistration.k8s.io/v1/mutatingwebhookconfigurations/hostport-admission";

json webhookConfiguration(std::string_view kind, std::vector<std::string> names) {
  json webhooks = json::array();
  for (const auto& name : names) {
    webhooks.push_back(
        {{"name", name},
         {"clientConfig",
          {{"service",
            {{"name", "hostport-admission"}, {"namespace", "hostport"}, {"path", "/validate"}}}}},
         {"admissionReviewVersions", {"v1"}},
         {"sideEffects", "None"}});
  }
  return {
      {"apiVersion", "admissionregistration.k8s.io/v1"}, {"kind", kind}, {"webhooks", webhooks}};
}

class CertificateKeeperTest : public ::testing::Test {
 protected:
  void SetUp() override {
    auto started = kube::FakeKubeApiServer::start();
    ASSERT_OK(started);
    api_ = std::move(*started);
    ASSERT_OK(api_->putObject(kValidating, webhookConfiguration("ValidatingWebhookConfiguration",
                                                                {"validate.hostport.io"})));
    ASSERT_OK(api_->putObject(kMutating,
                              webhookConfiguration("MutatingWebhookConfiguration",
                                                   {"mutate.hostport.io", "claim.hostport.io"})));
  }

  std::unique_ptr<kube::KubeClient> client() {
    auto path = api_->writeKubeconfig(dir_.path());
    EXPECT_OK(path);
    auto config = kube::loadKubeconfig(path->string());
    EXPECT_OK(config);
    auto made = kube::KubeClient::create(*config, {}, [](auto) { return true; });
    EXPECT_OK(made);
    return std::move(*made);
  }

  static CertificateSite site() {
    return {"hostport", "hostport-admission-tls", "hostport-admission", "hostport-admission",
            "hostport-admission"};
  }

  /// Every caBundle of both configurations.
  std::vector<std::string> bundles() const {
    std::vector<std::string> out;
    for (const auto path : {kValidating, kMutating}) {
      const json configuration = api_->object(path).value();
      for (const auto& webhook : configuration["webhooks"]) {
        out.push_back(webhook["clientConfig"].value("caBundle", ""));
      }
    }
    return out;
  }

  std::unique_ptr<kube::FakeKubeApiServer> api_;
  test::TempDir dir_;
};

TEST_F(CertificateKeeperTest, AFirstPassStoresTheCertificatesAndMakesBothWebhooksTrustTheCa) {
  auto kube = client();
  CertificateKeeper keeper(*kube, site());
  ASSERT_OK_AND_ASSIGN(const auto first, keeper.pass());
  EXPECT_EQ(first.verdict.renewal, Renewal::kAll);
  EXPECT_TRUE(first.wroteSecret);
  EXPECT_EQ(first.patchedConfigurations, 2);
  const json secret = api_->object(kSecret).value();
  ASSERT_OK_AND_ASSIGN(const auto stored, readSecretData(secret));
  EXPECT_EQ(stored, first.certificates);
  const std::string bundle = kube::encodeBase64(first.certificates.ca.certificatePem);
  EXPECT_EQ(bundles(), (std::vector<std::string>{bundle, bundle, bundle}));

  api_->clearRequests();
  ASSERT_OK_AND_ASSIGN(const auto second, keeper.pass());
  EXPECT_EQ(second.verdict.renewal, Renewal::kNone);
  EXPECT_EQ(second.certificates, first.certificates);
  EXPECT_EQ(second.patchedConfigurations, 0);
  for (const auto& request : api_->requests()) {
    EXPECT_EQ(request.method, "GET")
        << request.target << ": a pass with nothing due writes nothing";
  }
}

TEST_F(CertificateKeeperTest, ReplicasRacingForAnEmptySecretEndOnOneCa) {
  constexpr int kReplicas = 4;
  std::vector<std::unique_ptr<kube::KubeClient>> clients;
  for (int i = 0; i < kReplicas; ++i) clients.push_back(client());
  std::vector<Result<KeeperPass>> passes(kReplicas, fail(ErrorCode::kInternal, "not run"));
  {
    std::vector<std::jthread> replicas;
    for (int i = 0; i < kReplicas; ++i) {
      replicas.emplace_back([&, i] {
        CertificateKeeper keeper(*clients[i], site());
        passes[i] = keeper.pass();
      });
    }
  }
  ASSERT_OK_AND_ASSIGN(const auto stored, readSecretData(api_->object(kSecret).value()));
  int writers = 0;
  for (const auto& pass : passes) {
    ASSERT_OK(pass);
    EXPECT_EQ(pass->certificates, stored) << "every replica serves what the Secret holds";
    writers += pass->wroteSecret ? 1 : 0;
  }
  EXPECT_EQ(writers, 1);
  const std::string bundle = kube::encodeBase64(stored.ca.certificatePem);
  EXPECT_EQ(bundles(), (std::vector<std::string>{bundle, bundle, bundle}));
}

TEST_F(CertificateKeeperTest, AnExpiringCertificateIsRenewedByTheSameCa) {
  auto kube = client();
  ASSERT_OK_AND_ASSIGN(const auto first, CertificateKeeper(*kube, site()).pass());
  const auto later = [] { return std::chrono::system_clock::now() + hours(24 * 300); };
  CertificateKeeper keeper(*kube, site(), {}, later);
  ASSERT_OK_AND_ASSIGN(const auto renewed, keeper.pass());
  EXPECT_EQ(renewed.verdict.renewal, Renewal::kServing);
  EXPECT_TRUE(renewed.wroteSecret);
  EXPECT_EQ(renewed.certificates.ca, first.certificates.ca);
  EXPECT_NE(renewed.certificates.serving, first.certificates.serving);
  EXPECT_EQ(renewed.patchedConfigurations, 0) << "the caBundle did not change";
  ASSERT_OK_AND_ASSIGN(const auto stored, readSecretData(api_->object(kSecret).value()));
  EXPECT_EQ(stored, renewed.certificates);
}

TEST_F(CertificateKeeperTest, AStaleUpdateTakesWhatTheOtherReplicaWrote) {
  auto kube = client();
  ASSERT_OK(CertificateKeeper(*kube, site()).pass());
  // Both replicas find the certificate due. This one's update is held up on its way until the
  // other's has landed, so this one's resourceVersion is stale (409 Conflict).
  const auto later = [] { return std::chrono::system_clock::now() + hours(24 * 300); };
  api_->injectFault(
      kube::FakeKubeFault::heldUntilReleased().on(std::string(kSecret)).forMethod("PUT"));
  Result<KeeperPass> held = fail(ErrorCode::kInternal, "not run");
  std::jthread slow([&] { held = CertificateKeeper(*kube, site(), {}, later).pass(); });
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
  const auto putReceived = [&] {
    for (const auto& request : api_->requests()) {
      if (request.method == "PUT") return true;
    }
    return false;
  };
  while (!putReceived() && std::chrono::steady_clock::now() < deadline) {
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  ASSERT_TRUE(putReceived());
  auto other = client();
  const auto theirs = CertificateKeeper(*other, site(), {}, later).pass();
  api_->releaseHeld();  // only now: the held PUT lands after the other replica's, however slow
  slow.join();
  ASSERT_OK(theirs);
  EXPECT_TRUE(theirs->wroteSecret);
  ASSERT_OK(held);
  EXPECT_FALSE(held->wroteSecret);
  EXPECT_EQ(held->certificates, theirs->certificates);
  ASSERT_OK_AND_ASSIGN(const auto stored, readSecretData(api_->object(kSecret).value()));
  EXPECT_EQ(stored, theirs->certificates);
}

TEST_F(CertificateKeeperTest, LeavesASecretItDidNotMakeAlone) {
  // cert-manager's Secret of that name: tls.crt, tls.key and ca.crt, no CA key.
  ASSERT_OK_AND_ASSIGN(const auto made, renew(std::nullopt, Renewal::kAll,
                                              serviceDnsNames("hostport-admission", "hostport")));
  json data = secretData(made);
  data.erase("ca.key");
  ASSERT_OK(api_->putObject(kSecret, {{"data", data}}));
  const json before = api_->object(kSecret).value();
  auto kube = client();
  const auto refused = CertificateKeeper(*kube, site()).pass();
  ASSERT_FALSE(refused);
  EXPECT_EQ(refused.error().code, ErrorCode::kConflict);
  EXPECT_NE(refused.error().message.find("holds no ca.key"), std::string::npos)
      << refused.error().message;
  EXPECT_EQ(api_->object(kSecret).value(), before);
}

TEST_F(CertificateKeeperTest, AnApiErrorNamesTheObjectAndTheAnswer) {
  auto kube = client();
  api_->deleteObject(kMutating);
  CertificateKeeper keeper(*kube, site());
  const auto failed = keeper.pass();
  ASSERT_FALSE(failed);
  EXPECT_EQ(failed.error().message,
            "reading mutatingwebhookconfigurations hostport-admission: HTTP 404: "
            "\"mutatingwebhookconfigurations \\\"hostport-admission\\\" not found\"");
}

}  // namespace
}  // namespace hostport::admission
