#pragma once
// Keeps the webhook's certificates (the pattern of Gatekeeper's cert-controller), through the
// Kubernetes API: the Secret is the source of truth every replica reads. One pass:
//  1. read the Secret;
//  2. when renewalOf() says so, make what is due and write it: create the Secret when there was
//     none, update it (with the resourceVersion read) when there was; on 409 (another replica
//     wrote first) read again and take what it wrote, so replicas always end on one CA;
//  3. make both webhook configurations trust the CA: each webhook's clientConfig.caBundle,
//     patched only where it differs, guarded by the resourceVersion read.
// With certificates from files (cert-manager's, mounted), there is no keeper: see
// admission_server.h.
// Blocking, for one thread: the admission server runs it at start and then every check interval.

#include <chrono>
#include <functional>
#include <string>

#include "admission/webhook_certificates.h"
#include "common/error.h"
#include "kube/kube_client.h"

namespace hostport::admission {

/// Where the certificates live and who must trust them.
struct CertificateSite {
  std::string namespaceName;  // of the Secret and the Service
  std::string secretName;
  std::string serviceName;
  std::string validatingConfiguration;  // ValidatingWebhookConfiguration name
  std::string mutatingConfiguration;    // MutatingWebhookConfiguration name
};

/// What a pass did, for the log and the metrics.
struct KeeperPass {
  WebhookCertificates certificates;  // what the server must serve now
  RenewalVerdict verdict;            // what the Secret needed (kNone when it was fine)
  bool wroteSecret = false;          // false also when another replica's write was taken
  int patchedConfigurations = 0;
};

class CertificateKeeper {
 public:
  using Now = std::function<std::chrono::system_clock::time_point()>;

  CertificateKeeper(kube::KubeClient& client, CertificateSite site, CertificatePolicy policy = {},
                    Now now = std::chrono::system_clock::now);

  /// One pass. kUnavailable when the API server could not be reached; other errors name the
  /// object and the API's answer.
  Result<KeeperPass> pass();

 private:
  Result<std::optional<nlohmann::json>> readSecret();
  Result<WebhookCertificates> writeSecret(const std::optional<nlohmann::json>& secret,
                                          const WebhookCertificates& certificates);
  /// True when it patched; a patch that lost a race is judged again, `attempts` times in all.
  Result<bool> trustCa(const std::string& collection, const std::string& name,
                       const std::string& caPem, int attempts = 3);

  kube::KubeClient& client_;
  CertificateSite site_;
  CertificatePolicy policy_;
  Now now_;
  std::vector<std::string> dnsNames_;
};

}  // namespace hostport::admission
