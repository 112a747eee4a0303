#include "kube/cluster_config.h"

#include <yaml-cpp/yaml.h>

#include <charconv>
#include <filesystem>

#include "common/atomic_file.h"
#include "common/quote.h"
#include "kube/base64.h"

namespace hostport::kube {
namespace {

constexpr std::size_t kMaxFileBytes = 1 << 20;  // a kubeconfig, a CA bundle, a token

Result<std::string> readRequired(const std::filesystem::path& path, std::string_view what) {
  HOSTPORT_TRY(auto text, readSmallFile(path, kMaxFileBytes));
  if (!text)
    return fail(ErrorCode::kNotFound, std::string(what) + " " + path.string() + " is missing");
  return std::move(*text);
}

/// The named entry of a kubeconfig list ("clusters", "users", "contexts"): [{name, <kind>: {...}}].
Result<YAML::Node> namedEntry(const YAML::Node& root, const char* list, const char* kind,
                              const std::string& name) {
  const YAML::Node entries = root[list];
  if (entries && entries.IsSequence()) {
    for (const auto& entry : entries) {
      if (entry["name"] && entry["name"].as<std::string>() == name && entry[kind]) {
        return entry[kind];
      }
    }
  }
  return fail(ErrorCode::kInvalidArgument, std::string("kubeconfig has no ") + kind + " named " +
                                               quoteText(name) + " in " + list);
}

/// A PEM given inline as *-data (base64) or as a file path relative to the kubeconfig.
Result<std::string> pemOf(const YAML::Node& node, const std::string& key,
                          const std::filesystem::path& baseDir) {
  if (const auto data = node[key + "-data"])
    return decodeBase64(data.as<std::string>(), "kubeconfig " + key + "-data");
  if (const auto file = node[key]) {
    std::filesystem::path path = file.as<std::string>();
    if (path.is_relative()) path = baseDir / path;
    return readRequired(path, "kubeconfig " + key);
  }
  return std::string();
}

}  // namespace

std::string ClusterConfig::server() const {
  const bool ipv6 = host.find(':') != std::string::npos;
  return "https://" + (ipv6 ? "[" + host + "]" : host) + ":" + std::to_string(port);
}

Result<void> parseServer(std::string_view url, ClusterConfig& config) {
  const std::string quoted = quoteText(url);
  constexpr std::string_view kScheme = "https://";
  if (!url.starts_with(kScheme)) {
    return fail(ErrorCode::kInvalidArgument, "server " + quoted + " is not an https:// URL");
  }
  std::string_view rest = url.substr(kScheme.size());
  rest = rest.substr(0, rest.find('/'));
  std::string_view host = rest, port;
  if (rest.starts_with('[')) {
    const auto close = rest.find(']');
    if (close == std::string_view::npos) {
      return fail(ErrorCode::kInvalidArgument, "server " + quoted + " has an unclosed [");
    }
    host = rest.substr(1, close - 1);
    if (rest.size() > close + 1) {
      if (rest[close + 1] != ':')
        return fail(ErrorCode::kInvalidArgument, "server " + quoted + " is malformed");
      port = rest.substr(close + 2);
    }
  } else if (const auto colon = rest.rfind(':'); colon != std::string_view::npos) {
    host = rest.substr(0, colon);
    port = rest.substr(colon + 1);
  }
  if (host.empty()) return fail(ErrorCode::kInvalidArgument, "server " + quoted + " has no host");
  config.host = std::string(host);
  config.port = 443;
  if (!port.empty()) {
    unsigned value = 0;
    const auto [end, error] = std::from_chars(port.data(), port.data() + port.size(), value);
    if (error != std::errc() || end != port.data() + port.size() || value == 0 || value > 65535) {
      return fail(ErrorCode::kInvalidArgument, "server " + quoted + " has an invalid port");
    }
    config.port = static_cast<uint16_t>(value);
  }
  return {};
}

Result<std::optional<ClusterConfig>> inClusterConfig(const Getenv& getenv,
                                                     std::string_view serviceAccountDir) {
  const char* host = getenv("KUBERNETES_SERVICE_HOST");
  if (host == nullptr || *host == '\0') return std::nullopt;
  const char* port = getenv("KUBERNETES_SERVICE_PORT");
  std::string url =
      std::string("https://") + (std::string_view(host).find(':') != std::string_view::npos
                                     ? "[" + std::string(host) + "]"
                                     : std::string(host));
  if (port != nullptr && *port != '\0') url += ":" + std::string(port);
  ClusterConfig config;
  if (auto parsed = parseServer(url, config); !parsed) {
    return withContext(parsed.error(), "KUBERNETES_SERVICE_HOST/KUBERNETES_SERVICE_PORT");
  }
  const std::filesystem::path dir(serviceAccountDir);
  HOSTPORT_TRY(config.caPem, readRequired(dir / "ca.crt", "the service account CA"));
  config.credentials.tokenFile = (dir / "token").string();
  HOSTPORT_TRY_VOID(readRequired(config.credentials.tokenFile, "the service account token"));
  config.source = "in-cluster";
  return config;
}

Result<ClusterConfig> parseKubeconfig(std::string_view yaml, std::string_view path) {
  YAML::Node root;
  try {
    root = YAML::Load(std::string(yaml));
  } catch (const YAML::Exception& e) {
    return fail(ErrorCode::kInvalidArgument,
                "kubeconfig " + std::string(path) + " is not YAML: " + e.what());
  }
  try {
    const auto baseDir = std::filesystem::path(path).parent_path();
    const auto current = root["current-context"];
    if (!current || current.as<std::string>().empty()) {
      return fail(ErrorCode::kInvalidArgument,
                  "kubeconfig " + std::string(path) + " has no current-context");
    }
    HOSTPORT_TRY(const YAML::Node context,
                 namedEntry(root, "contexts", "context", current.as<std::string>()));
    HOSTPORT_TRY(const YAML::Node cluster,
                 namedEntry(root, "clusters", "cluster", context["cluster"].as<std::string>("")));
    HOSTPORT_TRY(const YAML::Node user,
                 namedEntry(root, "users", "user", context["user"].as<std::string>("")));

    ClusterConfig config;
    HOSTPORT_TRY_VOID(parseServer(cluster["server"].as<std::string>(""), config));
    if (cluster["proxy-url"]) {
      return fail(ErrorCode::kInvalidArgument, "kubeconfig proxy-url is not supported");
    }
    if (cluster["insecure-skip-tls-verify"] &&
        cluster["insecure-skip-tls-verify"].as<bool>(false)) {
      return fail(ErrorCode::kInvalidArgument,
                  "kubeconfig insecure-skip-tls-verify is refused: the agent verifies the server");
    }
    HOSTPORT_TRY(config.caPem, pemOf(cluster, "certificate-authority", baseDir));
    config.tlsServerName = cluster["tls-server-name"].as<std::string>("");
    for (const char* unsupported : {"exec", "auth-provider", "username", "password"}) {
      if (user[unsupported]) {
        return fail(ErrorCode::kInvalidArgument,
                    std::string("kubeconfig user ") + unsupported +
                        " is not supported; use a token, tokenFile or a client certificate");
      }
    }
    config.credentials.token = user["token"].as<std::string>("");
    if (const auto file = user["tokenFile"]) {
      std::filesystem::path tokenFile = file.as<std::string>();
      if (tokenFile.is_relative()) tokenFile = baseDir / tokenFile;
      config.credentials.tokenFile = tokenFile.string();
    }
    HOSTPORT_TRY(config.credentials.clientCertificatePem,
                 pemOf(user, "client-certificate", baseDir));
    HOSTPORT_TRY(config.credentials.clientKeyPem, pemOf(user, "client-key", baseDir));
    if (config.credentials.clientCertificatePem.empty() !=
        config.credentials.clientKeyPem.empty()) {
      return fail(ErrorCode::kInvalidArgument,
                  "kubeconfig user needs both client-certificate and client-key, or neither");
    }
    if (config.credentials.token.empty() && config.credentials.tokenFile.empty() &&
        config.credentials.clientCertificatePem.empty()) {
      return fail(ErrorCode::kInvalidArgument,
                  "kubeconfig user has no token, tokenFile or client certificate");
    }
    config.source = std::string(path);
    return config;
  } catch (const YAML::Exception& e) {
    return fail(ErrorCode::kInvalidArgument, "kubeconfig " + std::string(path) + ": " + e.what());
  }
}

Result<ClusterConfig> loadKubeconfig(const std::string& path) {
  HOSTPORT_TRY(const std::string text, readRequired(path, "kubeconfig"));
  return parseKubeconfig(text, path);
}

Result<std::optional<ClusterConfig>> findCluster(const std::string& kubeconfigPath,
                                                 const Getenv& getenv) {
  if (kubeconfigPath.empty()) return inClusterConfig(getenv);
  HOSTPORT_TRY(ClusterConfig config, loadKubeconfig(kubeconfigPath));
  return config;
}

}  // namespace hostport::kube
