#include "tls/certificate_authority.h"

#include <openssl/pem.h>

#include <utility>

#include "tls/openssl_handles.h"

namespace hostport::tls {
namespace {

Result<PkeyPtr> generateKey() {
  PkeyPtr key(EVP_EC_gen("P-256"));
  if (!key) return std::unexpected(openSslError(ErrorCode::kInternal, "cannot generate a key"));
  return key;
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

Result<X509Ptr> parseCertificate(std::string_view pem) {
  BioPtr bio = pemBio(pem);
  X509Ptr certificate(bio ? PEM_read_bio_X509(bio.get(), nullptr, nullptr, nullptr) : nullptr);
  if (!certificate) {
    return std::unexpected(openSslError(ErrorCode::kInvalidArgument, "not a PEM certificate"));
  }
  return certificate;
}

Result<PkeyPtr> parseKey(std::string_view pem) {
  BioPtr bio = pemBio(pem);
  PkeyPtr key(bio ? PEM_read_bio_PrivateKey(bio.get(), nullptr, nullptr, nullptr) : nullptr);
  if (!key) return std::unexpected(openSslError(ErrorCode::kInvalidArgument, "not a PEM key"));
  return key;
}

std::chrono::system_clock::time_point timeOf(const ASN1_TIME* time) {
  struct tm broken {};
  ASN1_TIME_to_tm(time, &broken);
  return std::chrono::system_clock::from_time_t(timegm(&broken));
}

/// What a certificate says beyond its key: subject, and X.509v3 extensions in OpenSSL's config
/// syntax ("critical,CA:TRUE"), added in order (the subject key identifier before the authority
/// key identifier that reads it).
struct CertificateSpec {
  std::string commonName;
  std::vector<std::string> organizations;
  std::vector<std::pair<int, std::string>> extensions;
  Validity validity;
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
      X509_gmtime_adj(X509_getm_notBefore(certificate.get()), -spec.validity.backdate.count()) ==
          nullptr ||
      X509_gmtime_adj(X509_getm_notAfter(certificate.get()), spec.validity.lifetime.count()) ==
          nullptr ||
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

struct CertificateAuthority::Impl {
  PkeyPtr key;
  X509Ptr certificate;
  PemCertificate pem;

  Result<PemCertificate> issue(const CertificateSpec& spec) const {
    HOSTPORT_TRY(PkeyPtr leafKey, generateKey());
    HOSTPORT_TRY(X509Ptr leaf, makeCertificate(spec, leafKey.get(), certificate.get(), key.get()));
    PemCertificate issued;
    HOSTPORT_TRY(issued.certificatePem, certificateToPem(leaf.get()));
    HOSTPORT_TRY(issued.privateKeyPem, keyToPem(leafKey.get()));
    return issued;
  }
};

CertificateAuthority::CertificateAuthority(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
CertificateAuthority::CertificateAuthority(CertificateAuthority&&) noexcept = default;
CertificateAuthority& CertificateAuthority::operator=(CertificateAuthority&&) noexcept = default;
CertificateAuthority::~CertificateAuthority() = default;

Result<CertificateAuthority> CertificateAuthority::create(std::string_view commonName,
                                                          Validity validity) {
  auto impl = std::make_unique<Impl>();
  HOSTPORT_TRY(impl->key, generateKey());
  const CertificateSpec spec{
      .commonName = std::string(commonName),
      .organizations = {},
      .extensions = {{NID_basic_constraints, "critical,CA:TRUE"},
                     {NID_key_usage, "critical,keyCertSign,cRLSign,digitalSignature"},
                     {NID_subject_key_identifier, "hash"}},
      .validity = validity,
  };
  HOSTPORT_TRY(impl->certificate, makeCertificate(spec, impl->key.get(), nullptr, impl->key.get()));
  HOSTPORT_TRY(impl->pem.certificatePem, certificateToPem(impl->certificate.get()));
  HOSTPORT_TRY(impl->pem.privateKeyPem, keyToPem(impl->key.get()));
  return CertificateAuthority(std::move(impl));
}

Result<CertificateAuthority> CertificateAuthority::load(const PemCertificate& certificate) {
  auto impl = std::make_unique<Impl>();
  HOSTPORT_TRY(impl->certificate, parseCertificate(certificate.certificatePem));
  HOSTPORT_TRY(impl->key, parseKey(certificate.privateKeyPem));
  if (X509_check_ca(impl->certificate.get()) == 0) {
    return fail(ErrorCode::kInvalidArgument, "the certificate is not a CA's");
  }
  if (X509_check_private_key(impl->certificate.get(), impl->key.get()) != 1) {
    return std::unexpected(
        openSslError(ErrorCode::kInvalidArgument, "the key is not the CA certificate's"));
  }
  impl->pem = certificate;
  return CertificateAuthority(std::move(impl));
}

const std::string& CertificateAuthority::certificatePem() const {
  return impl_->pem.certificatePem;
}

const PemCertificate& CertificateAuthority::pem() const { return impl_->pem; }

Result<PemCertificate> CertificateAuthority::issueServer(
    const std::vector<std::string>& dnsNames, const std::vector<std::string>& ipAddresses,
    Validity validity) const {
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
      .validity = validity,
  });
}

Result<PemCertificate> CertificateAuthority::issueClient(
    std::string_view commonName, const std::vector<std::string>& organizations,
    Validity validity) const {
  return impl_->issue({
      .commonName = std::string(commonName),
      .organizations = organizations,
      .extensions = {{NID_basic_constraints, "critical,CA:FALSE"},
                     {NID_key_usage, "critical,digitalSignature,keyEncipherment"},
                     {NID_ext_key_usage, "clientAuth"},
                     {NID_subject_key_identifier, "hash"},
                     {NID_authority_key_identifier, "keyid"}},
      .validity = validity,
  });
}

Result<CertificateFacts> readCertificate(std::string_view pem) {
  HOSTPORT_TRY(const X509Ptr certificate, parseCertificate(pem));
  CertificateFacts facts;
  facts.notBefore = timeOf(X509_get0_notBefore(certificate.get()));
  facts.notAfter = timeOf(X509_get0_notAfter(certificate.get()));
  facts.isCa = X509_check_ca(certificate.get()) != 0;
  GeneralNamesPtr names(static_cast<GENERAL_NAMES*>(
      X509_get_ext_d2i(certificate.get(), NID_subject_alt_name, nullptr, nullptr)));
  for (int i = 0; names && i < sk_GENERAL_NAME_num(names.get()); ++i) {
    const GENERAL_NAME* name = sk_GENERAL_NAME_value(names.get(), i);
    if (name->type != GEN_DNS) continue;
    const ASN1_IA5STRING* dns = name->d.dNSName;
    facts.dnsNames.emplace_back(reinterpret_cast<const char*>(ASN1_STRING_get0_data(dns)),
                                static_cast<std::size_t>(ASN1_STRING_length(dns)));
  }
  return facts;
}

bool signedBy(std::string_view certificatePem, std::string_view caPem,
              std::string_view privateKeyPem) {
  auto certificate = parseCertificate(certificatePem);
  auto ca = parseCertificate(caPem);
  if (!certificate || !ca) return false;
  EVP_PKEY* caKey = X509_get0_pubkey(ca->get());  // owned by the CA certificate
  if (caKey == nullptr || X509_verify(certificate->get(), caKey) != 1) return false;
  if (privateKeyPem.empty()) return true;
  auto key = parseKey(privateKeyPem);
  return key && X509_check_private_key(certificate->get(), key->get()) == 1;
}

}  // namespace hostport::tls
