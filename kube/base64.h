#pragma once
// Bytes as the Kubernetes API writes them in JSON and YAML: a Go []byte field (a Secret's data, a
// webhook's caBundle, an admission response's patch, a kubeconfig's *-data) is standard base64
// with padding (RFC 4648 §4).

#include <string>
#include <string_view>

#include "common/error.h"

namespace hostport::kube {

std::string encodeBase64(std::string_view bytes);

/// Standard base64 with padding; line breaks and spaces are skipped, as kubeconfig files fold
/// long values. kInvalidArgument "<what> is not base64" for anything else.
Result<std::string> decodeBase64(std::string_view text, std::string_view what);

}  // namespace hostport::kube
