#pragma once
// The webhook's certificates as the Secret keeps them, and when they are renewed: Gatekeeper's
// cert-controller rules. The Secret is the source of truth every replica reads; this file is
// pure, the keeper (certificate_keeper.h) reads and writes the Secret.
//
// Renewal keeps the CA while it can: a new serving certificate signed by the same CA changes
// nothing the API server trusts (the caBundle stays), so a rotation has no window in which the
// API server and the server disagree. A new CA comes only when there is none, it does not load,
// or it ends before a serving certificate made now would.

#include <chrono>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "common/error.h"
#include "tls/certificate_authority.h"

namespace hostport::admission {

/// The Secret's data keys: the serving pair under the kubernetes.io/tls names, so cert-manager's
/// Secrets (which add ca.crt) read the same, and the CA's key beside it.
inline constexpr std::string_view kCaCertificateKey = "ca.crt";
inline constexpr std::string_view kCaPrivateKeyKey = "ca.key";
inline constexpr std::string_view kServingCertificateKey = "tls.crt";
inline constexpr std::string_view kServingPrivateKeyKey = "tls.key";

struct CertificatePolicy {
  std::chrono::seconds caLifetime{std::chrono::hours(24 * 3650)};      // 10 years
  std::chrono::seconds servingLifetime{std::chrono::hours(24 * 365)};  // 1 year
  std::chrono::seconds renewBefore{std::chrono::hours(24 * 90)};       // 90 days
};

/// What the Secret holds.
struct WebhookCertificates {
  tls::PemCertificate ca;
  tls::PemCertificate serving;
  friend bool operator==(const WebhookCertificates&, const WebhookCertificates&) = default;
};

/// The certificates in a Secret object's `data` (base64, as the API returns it). kInvalidArgument
/// naming the key when one is missing or not base64; the PEMs themselves are judged by
/// renewalOf(). A Secret without ca.key was not made here (cert-manager keeps its CA's key to
/// itself): CertificateKeeper leaves such a Secret alone.
Result<WebhookCertificates> readSecretData(const nlohmann::json& secret);

/// The Secret's `data` for `certificates` (base64 values).
nlohmann::json secretData(const WebhookCertificates& certificates);

/// The DNS names the API server reaches a Service by: <service>.<namespace>.svc and its
/// cluster.local form (the API server names the first; the second serves in-cluster clients).
std::vector<std::string> serviceDnsNames(std::string_view service, std::string_view namespaceName);

enum class Renewal {
  kNone,     // both are good
  kServing,  // a new serving certificate by the same CA
  kAll,      // a new CA and a new serving certificate
};

/// Why, for the log: "absent", "serving certificate ends 2027-02-01T00:00:00Z", ...
struct RenewalVerdict {
  Renewal renewal = Renewal::kNone;
  std::string reason;
};

/// What `current` (nullopt: no Secret) needs at `now` for a server known by `dnsNames`.
RenewalVerdict renewalOf(const std::optional<WebhookCertificates>& current,
                         const std::vector<std::string>& dnsNames,
                         std::chrono::system_clock::time_point now,
                         const CertificatePolicy& policy = {});

/// Makes what `verdict` asks for: `current`'s CA kept for kServing. kNone returns `current`.
Result<WebhookCertificates> renew(const std::optional<WebhookCertificates>& current,
                                  Renewal renewal, const std::vector<std::string>& dnsNames,
                                  const CertificatePolicy& policy = {});

}  // namespace hostport::admission
