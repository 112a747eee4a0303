#pragma once
// What the agent tells a pod's owner that nothing else would: a Warning Event on the pod, as the
// kubelet's recorder writes one (core/v1 Event, `kubectl describe pod` shows it). The kubelet
// reports a failed sandbox; a hostNetwork pod has none, and a pod that asks more ports than it
// requests fails nothing at all. Pure.

#include <chrono>
#include <nlohmann/json.hpp>
#include <string>

#include "lease/lease.h"

namespace hostport::agent::publish {

/// Why a pod gets a Warning Event (its `reason`, CamelCase as the kubelet's).
inline constexpr std::string_view kPortsNotGranted = "HostPortsNotGranted";
inline constexpr std::string_view kPortsNotRequested = "HostPortsNotRequested";

struct PodWarning {
  PodIdentity pod;
  std::string reason;
  std::string message;
};

/// The Event for `warning` at `now`: named <pod>.<nanoseconds in hex> as client-go names them,
/// about the pod (with its UID), type Warning, from hostport-agent on `node`.
nlohmann::json podEvent(const PodWarning& warning, const std::string& node,
                        std::chrono::system_clock::time_point now);
/// "/api/v1/namespaces/<ns>/events".
std::string eventsPath(const std::string& namespaceName);

}  // namespace hostport::agent::publish
