#pragma once
// A certificate authority: a key and a self-signed CA certificate, made here or loaded from PEM,
// and the leaf certificates it signs for a server (DNS and IP subject alternative names) or a
// client (a common name and organizations, which Kubernetes reads as user and groups). EC P-256
// keys and SHA-256 signatures. The admission server keeps its webhook's CA and serving
// certificate with it (admission/), and the test fakes their TLS servers'.

#include <chrono>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "common/error.h"

namespace hostport::tls {

/// A certificate and its private key (PKCS#8), both PEM.
struct PemCertificate {
  std::string certificatePem;
  std::string privateKeyPem;
  friend bool operator==(const PemCertificate&, const PemCertificate&) = default;
};

/// When a certificate is valid: from `backdate` before it is made (clocks of its readers may be
/// behind) for `lifetime` after it is made.
struct Validity {
  std::chrono::seconds lifetime;
  std::chrono::seconds backdate{std::chrono::hours(1)};
};

class CertificateAuthority {
 public:
  /// A fresh key and a self-signed CA certificate. kInternal with OpenSSL's reason when a key or
  /// a certificate cannot be made.
  static Result<CertificateAuthority> create(std::string_view commonName, Validity validity);
  /// The CA of `certificate` (whose key is `privateKey`). kInvalidArgument when a PEM does not
  /// parse, the certificate is not a CA's, or the key is not the certificate's.
  static Result<CertificateAuthority> load(const PemCertificate& certificate);

  CertificateAuthority(CertificateAuthority&&) noexcept;
  CertificateAuthority& operator=(CertificateAuthority&&) noexcept;
  CertificateAuthority(const CertificateAuthority&) = delete;
  CertificateAuthority& operator=(const CertificateAuthority&) = delete;
  ~CertificateAuthority();

  /// The CA certificate, what a client trusts (a kubeconfig's certificate-authority, a caBundle).
  const std::string& certificatePem() const;
  /// The CA's certificate and key, as load() takes them.
  const PemCertificate& pem() const;

  /// A server certificate (extended key usage serverAuth) for these DNS names and IP addresses;
  /// kInvalidArgument for none, or for a name or address OpenSSL does not accept.
  Result<PemCertificate> issueServer(const std::vector<std::string>& dnsNames,
                                     const std::vector<std::string>& ipAddresses,
                                     Validity validity) const;

  /// A client certificate (extended key usage clientAuth) with this subject CN and O entries.
  Result<PemCertificate> issueClient(std::string_view commonName,
                                     const std::vector<std::string>& organizations,
                                     Validity validity) const;

 private:
  struct Impl;
  explicit CertificateAuthority(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

/// What the holder of a certificate needs to know of it: when it ends, and whom it names.
struct CertificateFacts {
  std::chrono::system_clock::time_point notBefore;
  std::chrono::system_clock::time_point notAfter;
  std::vector<std::string> dnsNames;  // its subject alternative names of type DNS
  bool isCa = false;
};

/// Reads the first certificate of `pem`. kInvalidArgument when there is none.
Result<CertificateFacts> readCertificate(std::string_view pem);

/// True when `certificatePem`'s signature verifies with the key of `caPem`'s certificate, and
/// `privateKeyPem` (when not empty) is the key of `certificatePem`.
bool signedBy(std::string_view certificatePem, std::string_view caPem,
              std::string_view privateKeyPem = {});

}  // namespace hostport::tls
