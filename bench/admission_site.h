#pragma once
// What the admission benchmarks share (admission_load.cc, claim_load.cc): the pod and the review
// kube-apiserver sends, a TLS client that trusts the server's CA as the API server does, and a
// server's files and start.

#include <cstdint>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <string_view>

#include "kube/https_transport.h"

namespace hostport::bench {

/// The name the serving certificate is for, which the clients check.
inline constexpr const char* kAdmissionServiceName = "hostport-admission.hostport.svc";

/// A pod of a Deployment as kube-apiserver sends it to a CREATE webhook: defaulted, with its
/// managedFields, a projected service-account volume and the usual tolerations, asking
/// "game=7777/udp" from `pool` (about 3.2 KB).
nlohmann::json deploymentPod(std::string_view pool);

/// The AdmissionReview of a CREATE of `pod`, with `uid`.
nlohmann::json review(const nlohmann::json& pod, const std::string& uid);

/// A kept-alive TLS client of 127.0.0.1:`port` that trusts only `caPem`; exits on failure.
std::unique_ptr<kube::HttpsTransport> admissionClient(const std::string& caPem, uint16_t port);

/// Writes `text` to `path`; exits on failure.
void writeFile(const std::string& path, const std::string& text);

/// A CA and a serving certificate made by the server's own code, written to DIR/tls.crt and
/// DIR/tls.key, and `agentYaml` to DIR/agent.yaml; returns the CA's PEM.
std::string prepareAdmission(const std::string& dir, std::string_view agentYaml);

/// Waits until the server `pid` answers GET /readyz on `port` (30 s at most); exits with its log
/// otherwise.
void waitAdmissionReady(int pid, const std::string& caPem, uint16_t port,
                        const std::string& logPath);

}  // namespace hostport::bench
