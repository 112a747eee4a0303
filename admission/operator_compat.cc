#include "admission/operator_compat.h"

#include "annotations/annotation_names.h"
#include "common/protocol.h"

namespace hostport::admission {
namespace {

bool hasAnnotation(const PodView& pod, std::string_view key) {
  return pod.annotations.contains(key);
}

}  // namespace

OperatorTranslation translateOperatorStyle(const PodView& pod) {
  OperatorTranslation out;
  // What the operator let a pod choose is a pool's setting here, chosen by the cluster's operator.
  if (hasAnnotation(pod, annotations::kBasePortAnnotation)) {
    out.warnings.push_back(std::string(annotations::kBasePortAnnotation) +
                           " is not read: the ranges of the pool (agent.yaml) say where ports come "
                           "from");
  }
  if (hasAnnotation(pod, annotations::kStrategyAnnotation)) {
    out.warnings.push_back(std::string(annotations::kStrategyAnnotation) +
                           " is not read: the strategy of the pool (agent.yaml) says how ports are "
                           "picked");
  }
  const auto enabled = pod.annotations.find(annotations::kEnabledAnnotation);
  if (enabled == pod.annotations.end() || *enabled != "true" ||
      hasAnnotation(pod, annotations::kPortsAnnotation)) {
    return out;
  }
  std::string ports;
  for (const ContainerView& container : pod.containers) {
    for (const ContainerPortView& port : container.ports) {
      if (port.name.empty() || port.hostPort != 0) continue;
      if (!ports.empty()) ports += ", ";
      ports += port.name + "=" + std::to_string(port.containerPort) + "/" +
               std::string(protocolName(port.protocol));
    }
  }
  if (ports.empty()) {
    out.warnings.push_back(std::string(annotations::kEnabledAnnotation) +
                           " is \"true\" but no named containerPort is without a hostPort: no "
                           "port is asked for");
    return out;
  }
  out.portsAnnotation = std::move(ports);
  return out;
}

}  // namespace hostport::admission
