#include "tests/fakes/test_certificates.h"

#include <openssl/bn.h>
#include <openssl/err.h>
#include <openssl/evp.h>
#include <openssl/pem.h>
#include <openssl/x509.h>
#include <openssl/x509v3.h>

#include <utility>

namespace hostport::test {

namespace {

/// Frees an OpenSSL handle with its own free function: the deleter of every handle below.
template <auto Free>
struct OpenSslFree {
  template <typename T>
  void operator()(T* handle) const {
    Free(handle);
  }
};

using PkeyPtr = std::unique_ptr<EVP_PKEY, OpenSslFree<&EVP_PKEY_free>>;
using X509Ptr = std::unique_ptr<X509, OpenSslFree<&X509_free>>;
using BioPtr = std::unique_ptr<BIO, OpenSslFree<&BIO_free_all>>;
using BignumPtr = std::unique_ptr<BIGNUM, OpenSslFree<&BN_free>>;
using ExtensionPtr = std::unique_ptr<X509_EXTENSION, OpenSslFree<&X509_EXTENSION_free>>;

constexpr long kValidBeforeNowSeconds = 60 * 60;
constexpr long kValidAfterNowSeconds = 24 * 60 * 60;

/// "<what>: <OpenSSL's reasons>", emptying OpenSSL's error queue of this thread.
Error openSslError(ErrorCode code, std::string_view what) {
  std::string message(what);
  char buffer[256];
  for (unsigned long error = ERR_get_error(); error != 0; error = ERR_get_error()) {
    ERR_error_string_n(error, buffer, sizeof(buffer));
    message += message.size() == what.size() ? ": " : "; ";
    message += buffer;
  }
  return Error{code, std::move(message), {}, {}};
}

Result<PkeyPtr> generateKey() {
  PkeyPtr key(EVP_EC_gen("P-256"));
  if (!key) return std::unexpected(openSslError(ErrorCode::kInternal, "cannot generate a key"));
  return key;
}

Result<std::string> readBio(BIO* bio) {
  char* data = nullptr;
  const long size = BIO_get_mem_data(bio, &data);
  if (size < 0 || data == nullptr) {
    return std::unexpected(openSslError(ErrorCode::kInternal, "cannot read a memory BIO"));
  }
  return std::string(data, static_cast<std::size_t>(size));
}

Result<std::string> certificateToPem(X509* certificate) {
  BioPtr bio(BIO_new(BIO_s_mem()));
  if (!bio || PEM_write_bio_X509(bio.get(), certificate) != 1) {
    return std::unexpected(openSslError(ErrorCode::kInternal, "cannot write a certificate"));
  }
  return readBio(bio.get());
}

Result<std::string> keyToPem(EVP_PKEY* key) {
  BioPtr bio(BIO_new(BIO_s_mem()));
  if (!bio ||
      PEM_write_bio_PrivateKey(bio.get(), key, nullptr, nullptr, 0, nullptr, nullptr) != 1) {
    return std::unexpected(openSslError(ErrorCode::kInternal, "cannot write a private key"));
  }
  return readBio(bio.get());
}

/// What a certificate says beyond its key: subject, and X.509v3 extensions in OpenSSL's config
/// syntax ("critical,CA:TRUE"), added in order (the subject key identifier before the authority
/// key identifier that reads it).
struct CertificateSpec {
  std::string commonName;
  std::vector<std::string> organizations;
  std::vector<std::pair<int, std::string>> extensions;
};

/// Builds and signs a certificate for `subjectKey`: by `issuerKey` under `issuer`, or self-signed
/// when `issuer` is null.
Result<X509Ptr> makeCertificate(const CertificateSpec& spec, EVP_PKEY* subjectKey, X509* issuer,
                                EVP_PKEY* issuerKey) {
  X509Ptr certificate(X509_new());
  BignumPtr serial(BN_new());
  if (!certificate || !serial || X509_set_version(certificate.get(), X509_VERSION_3) != 1 ||
      BN_rand(serial.get(), 63, BN_RAND_TOP_ANY, BN_RAND_BOTTOM_ANY) != 1 ||
      BN_to_ASN1_INTEGER(serial.get(), X509_get_serialNumber(certificate.get())) == nullptr ||
      X509_gmtime_adj(X509_getm_notBefore(certificate.get()), -kValidBeforeNowSeconds) == nullptr ||
      X509_gmtime_adj(X509_getm_notAfter(certificate.get()), kValidAfterNowSeconds) == nullptr ||
      X509_set_pubkey(certificate.get(), subjectKey) != 1) {
    return std::unexpected(openSslError(ErrorCode::kInternal, "cannot start a certificate"));
  }
  X509_NAME* subject = X509_get_subject_name(certificate.get());  // owned by the certificate
  const auto addName = [subject](const char* field, const std::string& value) {
    return X509_NAME_add_entry_by_txt(subject, field, MBSTRING_UTF8,
                                      reinterpret_cast<const unsigned char*>(value.c_str()), -1, -1,
                                      0) == 1;
  };
  for (const std::string& organization : spec.organizations) {
    if (!addName("O", organization)) {
      return std::unexpected(openSslError(ErrorCode::kInvalidArgument, "bad organization"));
    }
  }
  if (!addName("CN", spec.commonName)) {
    return std::unexpected(openSslError(ErrorCode::kInvalidArgument, "bad common name"));
  }
  X509* signer = issuer != nullptr ? issuer : certificate.get();
  if (X509_set_issuer_name(certificate.get(), X509_get_subject_name(signer)) != 1) {
    return std::unexpected(openSslError(ErrorCode::kInternal, "cannot set the issuer"));
  }
  X509V3_CTX context;
  X509V3_set_ctx_nodb(&context);
  X509V3_set_ctx(&context, signer, certificate.get(), nullptr, nullptr, 0);
  for (const auto& [nid, value] : spec.extensions) {
    ExtensionPtr extension(X509V3_EXT_nconf_nid(nullptr, &context, nid, value.c_str()));
    if (!extension || X509_add_ext(certificate.get(), extension.get(), -1) != 1) {
      return std::unexpected(
          openSslError(ErrorCode::kInvalidArgument, "bad certificate extension \"" + value + "\""));
    }
  }
  if (X509_sign(certificate.get(), issuerKey, EVP_sha256()) == 0) {
    return std::unexpected(openSslError(ErrorCode::kInternal, "cannot sign a certificate"));
  }
  return certificate;
}

}  // namespace

struct TestCertificateAuthority::Impl {
  PkeyPtr key;
  X509Ptr certificate;
  std::string certificatePem;

  Result<PemCertificate> issue(const CertificateSpec& spec) const {
    HOSTPORT_TRY(PkeyPtr leafKey, generateKey());
    HOSTPORT_TRY(X509Ptr leaf, makeCertificate(spec, leafKey.get(), certificate.get(), key.get()));
    PemCertificate pem;
    HOSTPORT_TRY(pem.certificatePem, certificateToPem(leaf.get()));
    HOSTPORT_TRY(pem.privateKeyPem, keyToPem(leafKey.get()));
    return pem;
  }
};

TestCertificateAuthority::TestCertificateAuthority(std::unique_ptr<Impl> impl)
    : impl_(std::move(impl)) {}
TestCertificateAuthority::TestCertificateAuthority(TestCertificateAuthority&&) noexcept = default;
TestCertificateAuthority& TestCertificateAuthority::operator=(TestCertificateAuthority&&) noexcept =
    default;
TestCertificateAuthority::~TestCertificateAuthority() = default;

Result<TestCertificateAuthority> TestCertificateAuthority::create(std::string_view commonName) {
  auto impl = std::make_unique<Impl>();
  HOSTPORT_TRY(impl->key, generateKey());
  const CertificateSpec spec{
      .commonName = std::string(commonName),
      .organizations = {},
      .extensions = {{NID_basic_constraints, "critical,CA:TRUE"},
                     {NID_key_usage, "critical,keyCertSign,cRLSign,digitalSignature"},
                     {NID_subject_key_identifier, "hash"}},
  };
  HOSTPORT_TRY(impl->certificate, makeCertificate(spec, impl->key.get(), nullptr, impl->key.get()));
  HOSTPORT_TRY(impl->certificatePem, certificateToPem(impl->certificate.get()));
  return TestCertificateAuthority(std::move(impl));
}

const std::string& TestCertificateAuthority::certificatePem() const {
  return impl_->certificatePem;
}

Result<PemCertificate> TestCertificateAuthority::issueServer(
    const std::vector<std::string>& dnsNames, const std::vector<std::string>& ipAddresses) const {
  std::string names;
  for (const std::string& name : dnsNames) names += (names.empty() ? "DNS:" : ",DNS:") + name;
  for (const std::string& ip : ipAddresses) names += (names.empty() ? "IP:" : ",IP:") + ip;
  if (names.empty()) return fail(ErrorCode::kInvalidArgument, "a server certificate needs a name");
  const std::string commonName = dnsNames.empty() ? ipAddresses.front() : dnsNames.front();
  return impl_->issue({
      .commonName = commonName,
      .organizations = {},
      .extensions = {{NID_basic_constraints, "critical,CA:FALSE"},
                     {NID_key_usage, "critical,digitalSignature,keyEncipherment"},
                     {NID_ext_key_usage, "serverAuth"},
                     {NID_subject_key_identifier, "hash"},
                     {NID_authority_key_identifier, "keyid"},
                     {NID_subject_alt_name, names}},
  });
}

Result<PemCertificate> TestCertificateAuthority::issueClient(
    std::string_view commonName, const std::vector<std::string>& organizations) const {
  return impl_->issue({
      .commonName = std::string(commonName),
      .organizations = organizations,
      .extensions = {{NID_basic_constraints, "critical,CA:FALSE"},
                     {NID_key_usage, "critical,digitalSignature,keyEncipherment"},
                     {NID_ext_key_usage, "clientAuth"},
                     {NID_subject_key_identifier, "hash"},
                     {NID_authority_key_identifier, "keyid"}},
  });
}

}  // namespace hostport::test
