#include "admission/webhook_certificates.h"

#include <algorithm>

#include "common/json_fields.h"
#include "kube/api_time.h"
#include "kube/base64.h"

namespace hostport::admission {
namespace {

using nlohmann::json;

Result<std::string> dataValue(const json& data, std::string_view key) {
  const JsonField field = jsonField(data, "data", key);
  HOSTPORT_TRY(const std::string encoded, readString(field));
  return kube::decodeBase64(encoded, field.path);
}

}  // namespace

Result<WebhookCertificates> readSecretData(const json& secret) {
  const json* data = jsonMember(secret, "data");
  if (data == nullptr || !data->is_object()) return missingValue("data");
  WebhookCertificates out;
  HOSTPORT_TRY(out.serving.certificatePem, dataValue(*data, kServingCertificateKey));
  HOSTPORT_TRY(out.serving.privateKeyPem, dataValue(*data, kServingPrivateKeyKey));
  HOSTPORT_TRY(out.ca.certificatePem, dataValue(*data, kCaCertificateKey));
  HOSTPORT_TRY(out.ca.privateKeyPem, dataValue(*data, kCaPrivateKeyKey));
  return out;
}

json secretData(const WebhookCertificates& certificates) {
  json data = {{kCaCertificateKey, kube::encodeBase64(certificates.ca.certificatePem)},
               {kServingCertificateKey, kube::encodeBase64(certificates.serving.certificatePem)},
               {kServingPrivateKeyKey, kube::encodeBase64(certificates.serving.privateKeyPem)}};
  if (!certificates.ca.privateKeyPem.empty()) {
    data[kCaPrivateKeyKey] = kube::encodeBase64(certificates.ca.privateKeyPem);
  }
  return data;
}

std::vector<std::string> serviceDnsNames(std::string_view service, std::string_view namespaceName) {
  const std::string name = std::string(service) + "." + std::string(namespaceName) + ".svc";
  return {name, name + ".cluster.local"};
}

RenewalVerdict renewalOf(const std::optional<WebhookCertificates>& current,
                         const std::vector<std::string>& dnsNames,
                         std::chrono::system_clock::time_point now,
                         const CertificatePolicy& policy) {
  if (!current) return {Renewal::kAll, "no certificates yet"};
  const auto ca = tls::readCertificate(current->ca.certificatePem);
  if (!ca || !ca->isCa) return {Renewal::kAll, "the CA certificate does not load"};
  if (!tls::CertificateAuthority::load(current->ca)) {
    return {Renewal::kAll, "the CA's key does not load or is not the CA certificate's"};
  }
  // A serving certificate made now must not outlive its CA.
  if (ca->notAfter < now + policy.servingLifetime + policy.renewBefore) {
    return {Renewal::kAll, "the CA ends " + kube::apiTime(ca->notAfter)};
  }
  const auto serving = tls::readCertificate(current->serving.certificatePem);
  if (!serving) return {Renewal::kServing, "the serving certificate does not load"};
  if (!tls::signedBy(current->serving.certificatePem, current->ca.certificatePem,
                     current->serving.privateKeyPem)) {
    return {Renewal::kServing, "the serving certificate is not the CA's, or not its key's"};
  }
  if (!std::ranges::all_of(dnsNames, [&](const std::string& name) {
        return std::ranges::find(serving->dnsNames, name) != serving->dnsNames.end();
      })) {
    return {Renewal::kServing, "the serving certificate does not name " + dnsNames.front()};
  }
  if (serving->notAfter < now + policy.renewBefore) {
    return {Renewal::kServing, "the serving certificate ends " + kube::apiTime(serving->notAfter)};
  }
  return {Renewal::kNone, ""};
}

Result<WebhookCertificates> renew(const std::optional<WebhookCertificates>& current,
                                  Renewal renewal, const std::vector<std::string>& dnsNames,
                                  const CertificatePolicy& policy) {
  if (renewal == Renewal::kNone && current) return *current;
  std::optional<tls::CertificateAuthority> ca;
  if (renewal == Renewal::kServing && current) {
    HOSTPORT_TRY(ca, tls::CertificateAuthority::load(current->ca));
  } else {
    HOSTPORT_TRY(ca, tls::CertificateAuthority::create("hostport-admission CA",
                                                       tls::Validity{policy.caLifetime}));
  }
  WebhookCertificates renewed;
  renewed.ca = ca->pem();
  HOSTPORT_TRY(renewed.serving,
               ca->issueServer(dnsNames, {}, tls::Validity{policy.servingLifetime}));
  return renewed;
}

}  // namespace hostport::admission
