#pragma once
// Where the Kubernetes API server is and how to prove who we are, found the way every Kubernetes
// component finds it: in a pod, from KUBERNETES_SERVICE_HOST/_PORT and the service account files
// (client-go's rest.InClusterConfig); otherwise from a kubeconfig file (--kubeconfig). Pure
// parsing and file reads; the transport is https_transport.h.

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <string_view>

#include "common/error.h"

namespace hostport::kube {

inline constexpr std::string_view kServiceAccountDir =
    "/var/run/secrets/kubernetes.io/serviceaccount";

/// How requests are authenticated: a bearer token (inline, or a file read again when it changes:
/// projected tokens rotate), a client certificate, or both.
struct Credentials {
  std::string token;
  std::string tokenFile;
  std::string clientCertificatePem;
  std::string clientKeyPem;
};

struct ClusterConfig {
  std::string host;  // a DNS name or an IP address, without brackets
  uint16_t port = 443;
  std::string caPem;  // trusted roots for the server's certificate; empty: the system's
  /// The name the server's certificate must carry, also sent as SNI; empty: `host` (a
  /// kubeconfig's tls-server-name, for a server reached by an address its certificate lacks).
  std::string tlsServerName;
  Credentials credentials;
  std::string source;  // "in-cluster" or the kubeconfig's path, for the log

  /// "https://host:port", IPv6 in brackets.
  std::string server() const;
};

using Getenv = std::function<const char*(const char*)>;

/// The in-cluster config, or nullopt when KUBERNETES_SERVICE_HOST is unset (not in a pod). An
/// error when the env says we are in a pod but the service account files cannot be read.
Result<std::optional<ClusterConfig>> inClusterConfig(
    const Getenv& getenv, std::string_view serviceAccountDir = kServiceAccountDir);

/// The config of a kubeconfig's current context. Paths in it are relative to the file's directory,
/// as kubectl reads them. kInvalidArgument naming the key for anything missing or unsupported
/// (an exec or auth-provider plugin, a proxy).
Result<ClusterConfig> parseKubeconfig(std::string_view yaml, std::string_view path);
Result<ClusterConfig> loadKubeconfig(const std::string& path);

/// The cluster a component is told to talk to: the kubeconfig at `kubeconfigPath` when there is
/// one, else the in-cluster config; nullopt when neither (no path, and not in a pod).
Result<std::optional<ClusterConfig>> findCluster(const std::string& kubeconfigPath,
                                                 const Getenv& getenv);

/// Splits "https://host[:port]" into the config's host and port. kInvalidArgument otherwise.
Result<void> parseServer(std::string_view url, ClusterConfig& config);

}  // namespace hostport::kube
