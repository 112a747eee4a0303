#pragma once
// Pods written for the hostport-operator keep working: it asked for ports with
// `hostport.io/enabled: "true"` and named containerPorts, and wrote `hostport.io/allocated-<name>`,
// which the agent writes too (agent/publish/pod_publication.h). Such a pod, when it has no
// hostport.io/ports of its own, is given one built from those ports, so the node reads one grammar.

#include <optional>
#include <string>
#include <vector>

#include "admission/pod_view.h"

namespace hostport::admission {

struct OperatorTranslation {
  /// The hostport.io/ports built for an opted-in pod: `name=containerPort/protocol` for each
  /// named containerPort without a hostPort, in container and port order; nullopt when the pod
  /// did not opt in, already has hostport.io/ports, or has no such port.
  std::optional<std::string> portsAnnotation;
  /// What the operator read that hostport does not, and what replaces it.
  std::vector<std::string> warnings;
};

OperatorTranslation translateOperatorStyle(const PodView& pod);

}  // namespace hostport::admission
