#pragma once
// Every name hostport gives a pod's reader and writer, in one place (docs/annotations.md): what a
// pod author writes, what the agent writes back, and the extended resources the scheduler counts.

#include <string_view>

namespace hostport::annotations {

/// Every hostport annotation and extended resource starts with it.
inline constexpr std::string_view kPrefix = "hostport.io/";

// Written by the pod's author (port_annotations.h has their grammar).
inline constexpr std::string_view kPortsAnnotation = "hostport.io/ports";
inline constexpr std::string_view kPoolAnnotation = "hostport.io/pool";
inline constexpr std::string_view kStickyAnnotation = "hostport.io/sticky";
/// The container whose resources carry the pool requests the admission server adds; absent: the
/// first app container.
inline constexpr std::string_view kResourceContainerAnnotation = "hostport.io/resource-container";

// The hostport-operator's opt-in (its users' pods keep working, admission/operator_compat.h).
inline constexpr std::string_view kEnabledAnnotation = "hostport.io/enabled";
inline constexpr std::string_view kBasePortAnnotation = "hostport.io/base-port";
inline constexpr std::string_view kStrategyAnnotation = "hostport.io/strategy";

// Written by the admission server when it claims a cluster pool's ports (admission/port_claim.h):
// whom the claim Leases name, "ns/name" (or "ns/<generateName>*<token>" for a pod that had no
// name yet), so a claim can be traced to its pod.
inline constexpr std::string_view kClaimHolderAnnotation = "hostport.io/claim-holder";

// Written by the agent once the ports are granted (agent/publish/pod_publication.h).
inline constexpr std::string_view kAssignedAnnotation = "hostport.io/assigned";
inline constexpr std::string_view kAllocatedAnnotationPrefix = "hostport.io/allocated-";

/// The extended resource of pool P is `hostport.io/P`: its free ports on the Node, and what a pod
/// asks of it in its resources.
inline constexpr std::string_view kResourcePrefix = kPrefix;

}  // namespace hostport::annotations
