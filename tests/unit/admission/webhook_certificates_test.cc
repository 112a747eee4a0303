// When the webhook's certificates are renewed (Gatekeeper's rules: CA 10 years, serving
// certificate 1 year, renewed 90 days before its end) and what the Secret holds.
#include "admission/webhook_certificates.h"

#include <gtest/gtest.h>

#include "tests/support/result_assertions.h"

namespace hostport::admission {
namespace {

using std::chrono::hours;
using Clock = std::chrono::system_clock;

constexpr auto kDay = hours(24);

class WebhookCertificatesTest : public ::testing::Test {
 protected:
  void SetUp() override {
    auto made = renew(std::nullopt, Renewal::kAll, names_);
    ASSERT_OK(made);
    current_ = std::move(*made);
  }

  const std::vector<std::string> names_ = serviceDnsNames("hostport-admission", "hostport");
  WebhookCertificates current_;
};

TEST_F(WebhookCertificatesTest, NamesTheServiceAsTheApiServerCallsIt) {
  EXPECT_EQ(names_, (std::vector<std::string>{"hostport-admission.hostport.svc",
                                              "hostport-admission.hostport.svc.cluster.local"}));
  ASSERT_OK_AND_ASSIGN(const auto serving, tls::readCertificate(current_.serving.certificatePem));
  EXPECT_EQ(serving.dnsNames, names_);
  ASSERT_OK_AND_ASSIGN(const auto ca, tls::readCertificate(current_.ca.certificatePem));
  EXPECT_TRUE(ca.isCa);
  EXPECT_GT(ca.notAfter, Clock::now() + kDay * 3649);
  EXPECT_GT(serving.notAfter, Clock::now() + kDay * 364);
  EXPECT_LT(serving.notAfter, Clock::now() + kDay * 366);
}

TEST_F(WebhookCertificatesTest, RenewsTheServingCertificate90DaysBeforeItsEndKeepingTheCa) {
  const auto now = Clock::now();
  EXPECT_EQ(renewalOf(current_, names_, now).renewal, Renewal::kNone);
  EXPECT_EQ(renewalOf(current_, names_, now + kDay * 270).renewal, Renewal::kNone);
  const auto due = renewalOf(current_, names_, now + kDay * 280);
  EXPECT_EQ(due.renewal, Renewal::kServing);
  EXPECT_TRUE(due.reason.starts_with("the serving certificate ends ")) << due.reason;

  ASSERT_OK_AND_ASSIGN(const auto renewed, renew(current_, Renewal::kServing, names_));
  EXPECT_EQ(renewed.ca, current_.ca) << "the caBundle the API server has stays good";
  EXPECT_NE(renewed.serving.certificatePem, current_.serving.certificatePem);
  EXPECT_TRUE(tls::signedBy(renewed.serving.certificatePem, current_.ca.certificatePem,
                            renewed.serving.privateKeyPem));
}

TEST_F(WebhookCertificatesTest, ANewCaComesOnlyWhenTheOldCannotOutliveANewServingCertificate) {
  const auto now = Clock::now();
  // 10 years minus a year and 90 days: a serving certificate made then would outlive the CA.
  EXPECT_EQ(renewalOf(current_, names_, now + kDay * (3650 - 460)).renewal, Renewal::kServing);
  EXPECT_EQ(renewalOf(current_, names_, now + kDay * (3650 - 450)).renewal, Renewal::kAll);
  EXPECT_EQ(renewalOf(std::nullopt, names_, now).renewal, Renewal::kAll);
  auto broken = current_;
  broken.ca.privateKeyPem = current_.serving.privateKeyPem;
  EXPECT_EQ(renewalOf(broken, names_, now).renewal, Renewal::kAll);
}

TEST_F(WebhookCertificatesTest, AServingCertificateForAnotherServiceOrCaIsReplaced) {
  const auto now = Clock::now();
  EXPECT_EQ(renewalOf(current_, serviceDnsNames("other", "hostport"), now).renewal,
            Renewal::kServing);
  ASSERT_OK_AND_ASSIGN(const auto other, renew(std::nullopt, Renewal::kAll, names_));
  auto mixed = current_;
  mixed.serving = other.serving;
  EXPECT_EQ(renewalOf(mixed, names_, now).renewal, Renewal::kServing);
}

TEST_F(WebhookCertificatesTest, TheSecretDataRoundTripsAndNamesAMissingKey) {
  const nlohmann::json secret = {{"data", secretData(current_)}};
  EXPECT_EQ(secret["data"].size(), 4u);
  ASSERT_OK_AND_ASSIGN(const auto read, readSecretData(secret));
  EXPECT_EQ(read, current_);
  nlohmann::json missing = secret;
  missing["data"].erase("tls.key");
  EXPECT_EQ(readSecretData(missing).error().message, "data.tls.key: missing");
  EXPECT_EQ(readSecretData(nlohmann::json::object()).error().message, "data: missing");
  nlohmann::json foreign = secret;
  foreign["data"].erase("ca.key");
  EXPECT_EQ(readSecretData(foreign).error().message, "data.ca.key: missing");
}

}  // namespace
}  // namespace hostport::admission
