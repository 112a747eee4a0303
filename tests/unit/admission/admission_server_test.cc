// The admission server in process, against the fake API server, over real TLS on 127.0.0.1: it
// keeps its certificates in the Secret, a client trusting only the CA found there gets its
// reviews answered in the node's words, 10,000 reviews from 32 kept-alive connections all pass,
// and a certificate another replica renews is served without a failed request.
#include "admission/admission_server.h"

#include <gtest/gtest.h>

#include <atomic>
#include <filesystem>
#include <fstream>
#include <thread>

#include "kube/base64.h"
#include "kube/https_transport.h"
#include "tests/fakes/fake_kube_apiserver.h"
#include "tests/support/result_assertions.h"
#include "tests/support/temp_dir.h"
#include "tests/support/tls_probe.h"
#include "tests/support/wait.h"
#include "tests/unit/admission/review_samples.h"
#include "tests/unit/admission/webhook_client.h"

namespace hostport::admission {
namespace {

using nlohmann::json;
using namespace std::chrono_literals;

constexpr std::string_view kValidating =
    "/apis/admissionregistration.k8s.io/v1/validatingwebhookconfigurations/hostport-admission";
constexpr std::string_view kMutating =
    "/apis/admissionregistration.k8s.io/v1/mutatingwebhookconfigurations/hostport-admission";

class AdmissionServerTest : public ::testing::Test {
 protected:
  void SetUp() override {
    auto started = kube::FakeKubeApiServer::start();
    ASSERT_OK(started);
    api_ = std::move(*started);
    const json webhooks = {
        {"webhooks", {{{"name", "x.hostport.io"}, {"clientConfig", json::object()}}}}};
    ASSERT_OK(api_->putObject(kValidating, webhooks));
    ASSERT_OK(api_->putObject(kMutating, webhooks));
    auto kubeconfig = api_->writeKubeconfig(dir_.path());
    ASSERT_OK(kubeconfig);
    ResolvedAdmissionConfig config;
    config.settings.kubeconfig = kubeconfig->string();
    config.settings.certificateCheckSeconds = 1;  // below the flag's bound: a test's pace
    config.settings.threads = 2;
    config.listen = {*IpAddress::parse("127.0.0.1"), 0};
    config.pools = samples::samplePools().pools();
    auto server = AdmissionServer::start(std::move(config));
    ASSERT_OK(server);
    server_ = std::move(*server);
    serving_ = std::thread([this] { server_->serve(); });
  }

  void TearDown() override {
    if (server_) server_->stop();
    if (serving_.joinable()) serving_.join();
  }

  /// A client that trusts only the CA the Secret holds, as the API server trusts the caBundle.
  std::unique_ptr<kube::HttpsTransport> client() const {
    return samples::webhookClient(*api_, server_->webhookPort());
  }

  static Result<json> review(kube::HttpsTransport& https, std::string_view path, const json& body) {
    HOSTPORT_TRY(
        const auto answer,
        https.exchange({"POST", std::string(path), "application/json", body.dump()}, "", 5000ms));
    if (answer.status != 200) {
      return fail(ErrorCode::kUnavailable,
                  "HTTP " + std::to_string(answer.status) + ": " + answer.body);
    }
    return json::parse(answer.body)["response"];
  }

  std::unique_ptr<kube::FakeKubeApiServer> api_;
  test::TempDir dir_;
  std::unique_ptr<AdmissionServer> server_;
  std::thread serving_;
};

TEST_F(AdmissionServerTest, KeepsItsCertificatesAndAnswersInTheNodesWords) {
  ASSERT_TRUE(api_->object(samples::kWebhookSecret).has_value());
  const json validating = api_->object(kValidating).value();
  EXPECT_FALSE(validating["webhooks"][0]["clientConfig"].value("caBundle", "").empty());
  auto https = client();
  const json malformed = samples::podReview(samples::samplePod({{"hostport.io/ports", "web=0"}}));
  ASSERT_OK_AND_ASSIGN(const json refused, review(*https, "/validate", malformed));
  EXPECT_EQ(refused["allowed"], false);
  EXPECT_EQ(refused["uid"], malformed["request"]["uid"]);
  EXPECT_EQ(refused["status"]["code"], 400);
  EXPECT_NE(refused["status"]["message"].get<std::string>().find("annotation hostport.io/ports"),
            std::string::npos);
  const json asking = samples::podReview(samples::samplePod({{"hostport.io/ports", "web=8080"}}));
  ASSERT_OK_AND_ASSIGN(const json patched, review(*https, "/mutate", asking));
  EXPECT_EQ(patched["allowed"], true);
  EXPECT_EQ(patched["patchType"], "JSONPatch");
  ASSERT_OK_AND_ASSIGN(const auto healthz,
                       https->exchange({"GET", "/healthz", "", ""}, "", 5000ms));
  EXPECT_EQ(healthz.status, 200);
  ASSERT_OK_AND_ASSIGN(const auto unknown,
                       https->exchange({"GET", "/validate", "", ""}, "", 5000ms));
  EXPECT_EQ(unknown.status, 405);
}

TEST_F(AdmissionServerTest, TenThousandReviewsFrom32ConnectionsAllPass) {
  constexpr int kConnections = 32;
  constexpr int kPerConnection = 10'000 / kConnections + 1;
  std::atomic<int> answered{0};
  std::atomic<int> failed{0};
  {
    std::vector<std::jthread> clients;
    for (int c = 0; c < kConnections; ++c) {
      clients.emplace_back([&, c] {
        auto https = client();
        json body = samples::podReview(samples::samplePod(
            {{"hostport.io/ports", "rtp=7000-7009/udp"}, {"hostport.io/pool", "games"}}));
        for (int i = 0; i < kPerConnection; ++i) {
          body["request"]["uid"] = std::to_string(c) + "-" + std::to_string(i);
          auto answer = review(*https, i % 2 == 0 ? "/validate" : "/mutate", body);
          if (answer && (*answer)["uid"] == body["request"]["uid"] &&
              (*answer)["allowed"] == true) {
            ++answered;
          } else {
            ++failed;
          }
        }
        if (https->connections() != 1) ++failed;
      });
    }
  }
  EXPECT_EQ(failed.load(), 0);
  EXPECT_EQ(answered.load(), kConnections * kPerConnection);
}

TEST_F(AdmissionServerTest, ACertificateAnotherReplicaRenewedIsServedWithoutAFailedRequest) {
  auto https = client();
  const std::string before = test::servedCertificate(server_->webhookPort()).value();
  std::atomic<bool> done{false};
  std::atomic<int> failures{0};
  std::atomic<int> answered{0};
  std::jthread load([&] {
    const json body = samples::podReview(samples::samplePod({{"hostport.io/ports", "web=8080"}}));
    while (!done) {
      auto answer = review(*https, "/validate", body);
      if (answer && (*answer)["allowed"] == true) {
        ++answered;
      } else {
        ++failures;
      }
    }
  });
  // Another replica renews: a new serving certificate by the same CA, in the Secret.
  json secret = api_->object(samples::kWebhookSecret).value();
  ASSERT_OK_AND_ASSIGN(auto current, readSecretData(secret));
  ASSERT_OK_AND_ASSIGN(
      const auto renewed,
      renew(current, Renewal::kServing, serviceDnsNames("hostport-admission", "hostport")));
  secret["data"] = secretData(renewed);
  ASSERT_OK(api_->putObject(samples::kWebhookSecret, secret));
  EXPECT_TRUE(test::waitUntil(
      [&] {
        auto served = test::servedCertificate(server_->webhookPort());
        return served && *served == renewed.serving.certificatePem;
      },
      20s))
      << "the renewed certificate is served within a few check intervals";
  const int before_count = answered.load();
  EXPECT_TRUE(test::waitUntil([&] { return answered.load() > before_count + 10; }, 10s));
  done = true;
  load.join();
  EXPECT_EQ(failures.load(), 0);
  EXPECT_GT(answered.load(), 10);
  EXPECT_EQ(https->connections(), 1) << "the kept-alive connection was never dropped";
  EXPECT_NE(before, renewed.serving.certificatePem);
}

/// With cert-manager: the certificate from files, no API server at all.
TEST(AdmissionServerFilesTest, ServesTheFilesAndTakesNewOnesWithoutAnApiServer) {
  test::TempDir dir;
  const std::string certFile = dir.path() + "/tls.crt";
  const std::string keyFile = dir.path() + "/tls.key";
  ASSERT_OK_AND_ASSIGN(const auto made, renew(std::nullopt, Renewal::kAll,
                                              serviceDnsNames("hostport-admission", "hostport")));
  const auto writeFiles = [&](const tls::PemCertificate& serving) {
    // As the kubelet updates a mounted Secret: new files, then one rename.
    std::ofstream(certFile + ".new") << serving.certificatePem;
    std::ofstream(keyFile + ".new") << serving.privateKeyPem;
    std::filesystem::rename(keyFile + ".new", keyFile);
    std::filesystem::rename(certFile + ".new", certFile);
  };
  writeFiles(made.serving);
  ResolvedAdmissionConfig config;
  config.settings.tlsCertFile = certFile;
  config.settings.tlsKeyFile = keyFile;
  config.settings.certificateCheckSeconds = 1;
  config.listen = {*IpAddress::parse("127.0.0.1"), 0};
  config.pools = samples::samplePools().pools();
  ASSERT_OK_AND_ASSIGN(auto server, AdmissionServer::start(std::move(config)));
  std::jthread serving([&] { server->serve(); });
  EXPECT_EQ(test::servedCertificate(server->webhookPort()).value(), made.serving.certificatePem);

  ASSERT_OK_AND_ASSIGN(
      const auto renewed,
      renew(made, Renewal::kServing, serviceDnsNames("hostport-admission", "hostport")));
  writeFiles(renewed.serving);
  EXPECT_TRUE(test::waitUntil(
      [&] {
        auto served = test::servedCertificate(server->webhookPort());
        return served && *served == renewed.serving.certificatePem;
      },
      20s));
  server->stop();
}

}  // namespace
}  // namespace hostport::admission
