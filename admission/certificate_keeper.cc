#include "admission/certificate_keeper.h"

#include "common/bounded_json.h"
#include "common/json_fields.h"
#include "common/quote.h"
#include "kube/base64.h"

namespace hostport::admission {
namespace {

using nlohmann::json;

constexpr std::size_t kMaxObjectBytes = 4 << 20;  // a Secret or a webhook configuration
constexpr int kMaxObjectDepth = 64;
constexpr std::string_view kJson = "application/json";
constexpr std::string_view kJsonPatch = "application/json-patch+json";
constexpr std::string_view kWebhooks = "/apis/admissionregistration.k8s.io/v1/";

std::string secretsPath(const CertificateSite& site) {
  return "/api/v1/namespaces/" + site.namespaceName + "/secrets";
}

Result<json> objectOf(const kube::KubeResponse& response, std::string_view what) {
  return parseBoundedJson(response.body, what, kMaxObjectBytes, kMaxObjectDepth);
}

}  // namespace

CertificateKeeper::CertificateKeeper(kube::KubeClient& client, CertificateSite site,
                                     CertificatePolicy policy, Now now)
    : client_(client),
      site_(std::move(site)),
      policy_(policy),
      now_(std::move(now)),
      dnsNames_(serviceDnsNames(site_.serviceName, site_.namespaceName)) {}

Result<std::optional<json>> CertificateKeeper::readSecret() {
  const std::string what = "secret " + site_.namespaceName + "/" + site_.secretName;
  HOSTPORT_TRY(const auto response,
               client_.send({"GET", secretsPath(site_) + "/" + site_.secretName, "", ""}));
  if (response.status == 404) return std::nullopt;
  if (!response.ok()) return std::unexpected(kube::answerError("reading " + what, response));
  HOSTPORT_TRY(json secret, objectOf(response, what));
  return secret;
}

Result<WebhookCertificates> CertificateKeeper::writeSecret(
    const std::optional<json>& secret, const WebhookCertificates& certificates) {
  const std::string what = "secret " + site_.namespaceName + "/" + site_.secretName;
  json written = secret.value_or(
      json{{"apiVersion", "v1"},
           {"kind", "Secret"},
           {"type", "Opaque"},
           {"metadata", {{"name", site_.secretName}, {"namespace", site_.namespaceName}}}});
  written["data"] = secretData(certificates);
  kube::ApiRequest request =
      secret ? kube::ApiRequest{"PUT", secretsPath(site_) + "/" + site_.secretName,
                                std::string(kJson), written.dump()}
             : kube::ApiRequest{"POST", secretsPath(site_), std::string(kJson), written.dump()};
  HOSTPORT_TRY(const auto response, client_.send(request));
  if (response.ok()) return certificates;
  if (response.status != 409) {
    return std::unexpected(
        kube::answerError((secret ? "updating " : "creating ") + what, response));
  }
  // Another replica wrote first (AlreadyExists, or a newer resourceVersion): its certificates are
  // the ones every replica serves now.
  HOSTPORT_TRY(const auto theirs, readSecret());
  if (!theirs) return fail(ErrorCode::kUnavailable, what + " vanished after a conflict");
  return readSecretData(*theirs);
}

Result<bool> CertificateKeeper::trustCa(const std::string& collection, const std::string& name,
                                        const std::string& caPem, int attempts) {
  const std::string path = std::string(kWebhooks) + collection + "/" + name;
  const std::string what = collection + " " + name;
  HOSTPORT_TRY(const auto response, client_.send({"GET", path, "", ""}));
  if (!response.ok()) return std::unexpected(kube::answerError("reading " + what, response));
  HOSTPORT_TRY(const json configuration, objectOf(response, what));
  const std::string bundle = kube::encodeBase64(caPem);
  json patch = json::array();
  const json* webhooks = jsonMember(configuration, "webhooks");
  for (std::size_t i = 0; webhooks != nullptr && webhooks->is_array() && i < webhooks->size();
       ++i) {
    const json& clientConfig = (*webhooks)[i].value("clientConfig", json::object());
    if (clientConfig.value("caBundle", "") == bundle) continue;
    patch.push_back({{"op", "add"},
                     {"path", "/webhooks/" + std::to_string(i) + "/clientConfig/caBundle"},
                     {"value", bundle}});
  }
  if (patch.empty()) return false;
  // Only onto the configuration read: a webhook list changed meanwhile fails the test (422).
  const json guard = {
      {"op", "test"},
      {"path", "/metadata/resourceVersion"},
      {"value", configuration.value("metadata", json::object()).value("resourceVersion", "")}};
  patch.insert(patch.begin(), guard);
  HOSTPORT_TRY(const auto patched,
               client_.send({"PATCH", path, std::string(kJsonPatch), patch.dump()}));
  if (patched.ok()) return true;
  // 422: the test failed, someone (another replica, most likely with the same bundle) changed
  // the configuration since it was read. Read it again and judge anew.
  if (patched.status == 422 && attempts > 1) return trustCa(collection, name, caPem, attempts - 1);
  return std::unexpected(kube::answerError("patching " + what, patched));
}

Result<KeeperPass> CertificateKeeper::pass() {
  KeeperPass done;
  HOSTPORT_TRY(const auto secret, readSecret());
  std::optional<WebhookCertificates> current;
  if (secret) {
    const json* data = jsonMember(*secret, "data");
    if (data == nullptr || jsonMember(*data, kCaPrivateKeyKey) == nullptr) {
      // Not one this server made (cert-manager's has no CA key): overwriting it would fight its
      // owner.
      return fail(ErrorCode::kConflict,
                  "secret " + site_.namespaceName + "/" + site_.secretName +
                      " holds no ca.key, so hostport-admission did not make it: give --secret "
                      "another name, or serve that Secret's certificate with --tls-cert-file and "
                      "--tls-key-file");
    }
    // A Secret of ours that does not read (a key edited by hand) is renewed whole.
    if (auto read = readSecretData(*secret)) current = std::move(*read);
  }
  done.verdict = renewalOf(current, dnsNames_, now_(), policy_);
  if (done.verdict.renewal == Renewal::kNone) {
    done.certificates = std::move(*current);
  } else {
    HOSTPORT_TRY(const auto renewed, renew(current, done.verdict.renewal, dnsNames_, policy_));
    HOSTPORT_TRY(done.certificates, writeSecret(secret, renewed));
    done.wroteSecret = done.certificates == renewed;
  }
  for (const auto& [collection, name] :
       {std::pair{"validatingwebhookconfigurations", &site_.validatingConfiguration},
        std::pair{"mutatingwebhookconfigurations", &site_.mutatingConfiguration}}) {
    if (name->empty()) continue;
    HOSTPORT_TRY(const bool patched,
                 trustCa(collection, *name, done.certificates.ca.certificatePem));
    done.patchedConfigurations += patched ? 1 : 0;
  }
  return done;
}

}  // namespace hostport::admission
