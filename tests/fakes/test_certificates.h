#pragma once
// Certificates made at test time, for the TLS fakes (fake_kube_apiserver.h) and their clients: a
// self-signed CA, and the leaf certificates it signs for a server (DNS and IP subject alternative
// names) or a client (a common name and organizations, which Kubernetes reads as user and groups).
// EC P-256 keys and SHA-256 signatures, valid from an hour ago (clock skew) for a day. Everything
// is a PEM string; nothing touches the disk. OpenSSL stays inside the .cc file.

#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "common/error.h"

namespace hostport::test {

/// A certificate and its private key (PKCS#8), both PEM.
struct PemCertificate {
  std::string certificatePem;
  std::string privateKeyPem;
};

/// A certificate authority for one test: a fresh key and a self-signed CA certificate.
class TestCertificateAuthority {
 public:
  /// kInternal with OpenSSL's reason when a key or a certificate cannot be made.
  static Result<TestCertificateAuthority> create(std::string_view commonName = "hostport test CA");

  TestCertificateAuthority(TestCertificateAuthority&&) noexcept;
  TestCertificateAuthority& operator=(TestCertificateAuthority&&) noexcept;
  TestCertificateAuthority(const TestCertificateAuthority&) = delete;
  TestCertificateAuthority& operator=(const TestCertificateAuthority&) = delete;
  ~TestCertificateAuthority();

  /// The CA certificate, what a client trusts (a kubeconfig's certificate-authority, ca.crt).
  const std::string& certificatePem() const;

  /// A server certificate (extended key usage serverAuth) valid for these DNS names and IP
  /// addresses; kInvalidArgument for a name or address OpenSSL does not accept.
  Result<PemCertificate> issueServer(const std::vector<std::string>& dnsNames,
                                     const std::vector<std::string>& ipAddresses) const;

  /// A client certificate (extended key usage clientAuth) with this subject CN and O entries.
  Result<PemCertificate> issueClient(std::string_view commonName,
                                     const std::vector<std::string>& organizations = {}) const;

 private:
  struct Impl;
  explicit TestCertificateAuthority(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

}  // namespace hostport::test
