// The certificate authority the admission server keeps its webhook's certificates with: what it
// makes says what was asked (names, validity, CA or not), and a CA loaded back from its PEM signs
// certificates its clients still trust.
#include "tls/certificate_authority.h"

#include <gtest/gtest.h>

#include "tests/support/result_assertions.h"

namespace hostport::tls {
namespace {

using std::chrono::hours;
using std::chrono::system_clock;

constexpr Validity kYear{hours(24 * 365)};

TEST(CertificateAuthorityTest, AServerCertificateNamesItsServiceAndEndsWhenAsked) {
  ASSERT_OK_AND_ASSIGN(const auto ca, CertificateAuthority::create("hostport-admission CA",
                                                                   Validity{hours(24 * 3650)}));
  ASSERT_OK_AND_ASSIGN(const auto server,
                       ca.issueServer({"hostport-admission.hostport.svc",
                                       "hostport-admission.hostport.svc.cluster.local"},
                                      {}, kYear));
  ASSERT_OK_AND_ASSIGN(const auto facts, readCertificate(server.certificatePem));
  EXPECT_FALSE(facts.isCa);
  EXPECT_EQ(facts.dnsNames,
            (std::vector<std::string>{"hostport-admission.hostport.svc",
                                      "hostport-admission.hostport.svc.cluster.local"}));
  const auto now = system_clock::now();
  EXPECT_LT(facts.notBefore, now - hours(1) + std::chrono::minutes(1));
  EXPECT_GT(facts.notAfter, now + hours(24 * 365) - std::chrono::minutes(1));
  EXPECT_LT(facts.notAfter, now + hours(24 * 365) + std::chrono::minutes(1));
  EXPECT_TRUE(signedBy(server.certificatePem, ca.certificatePem(), server.privateKeyPem));

  ASSERT_OK_AND_ASSIGN(const auto caFacts, readCertificate(ca.certificatePem()));
  EXPECT_TRUE(caFacts.isCa);
  EXPECT_GT(caFacts.notAfter, now + hours(24 * 3649));
}

TEST(CertificateAuthorityTest, ALoadedAuthoritySignsWhatItsClientsAlreadyTrust) {
  ASSERT_OK_AND_ASSIGN(const auto made, CertificateAuthority::create("CA", kYear));
  ASSERT_OK_AND_ASSIGN(const auto loaded, CertificateAuthority::load(made.pem()));
  EXPECT_EQ(loaded.certificatePem(), made.certificatePem());
  ASSERT_OK_AND_ASSIGN(const auto server, loaded.issueServer({"svc"}, {"10.0.0.1"}, kYear));
  EXPECT_TRUE(signedBy(server.certificatePem, made.certificatePem()));

  ASSERT_OK_AND_ASSIGN(const auto other, CertificateAuthority::create("other CA", kYear));
  EXPECT_FALSE(signedBy(server.certificatePem, other.certificatePem()));
  EXPECT_FALSE(signedBy(server.certificatePem, made.certificatePem(), other.pem().privateKeyPem));
}

TEST(CertificateAuthorityTest, RefusesToLoadWhatIsNotACaWithItsKey) {
  ASSERT_OK_AND_ASSIGN(const auto ca, CertificateAuthority::create("CA", kYear));
  ASSERT_OK_AND_ASSIGN(const auto other, CertificateAuthority::create("other CA", kYear));
  ASSERT_OK_AND_ASSIGN(const auto leaf, ca.issueServer({"svc"}, {}, kYear));
  EXPECT_EQ(CertificateAuthority::load(leaf).error().message, "the certificate is not a CA's");
  const auto mismatched =
      CertificateAuthority::load({ca.certificatePem(), other.pem().privateKeyPem});
  ASSERT_FALSE(mismatched);
  EXPECT_TRUE(mismatched.error().message.starts_with("the key is not the CA certificate's"))
      << mismatched.error().message;
  EXPECT_EQ(CertificateAuthority::load({"junk", "junk"}).error().code, ErrorCode::kInvalidArgument);
  EXPECT_EQ(readCertificate("junk").error().code, ErrorCode::kInvalidArgument);
}

TEST(CertificateAuthorityTest, AServerCertificateNeedsAName) {
  ASSERT_OK_AND_ASSIGN(const auto ca, CertificateAuthority::create("CA", kYear));
  EXPECT_EQ(ca.issueServer({}, {}, kYear).error().message, "a server certificate needs a name");
}

}  // namespace
}  // namespace hostport::tls
