#pragma once
// The pod socket's contract: where it is, what it answers, and the grammar of its one parameter.
// Shared by the agent (which serves it, agent/service/pod_handlers.h) and `hostportctl self`
// (which asks it from inside a pod). A pod sees its own ports and nothing else: namespace, name
// and ports, never another pod's lease, a container id or a netns path.
//
//   GET /v1/self[?wait=10s]               -> {"namespace", "name", "ports": [port...]}
//   GET /v1/self/ports/{name}[?wait=10s]  -> "30123\n" (text/plain; "20000-20009\n" for a range)
//   GET /v1/self/env[?wait=10s]           -> "HOSTPORT_WEB=30123\n..." (text/plain; envText())
//
// `wait` holds the answer until a lease exists for the caller's network namespace (at most
// kMaxPodWait), for a container that starts before its sandbox's ADD finished.

#include <chrono>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "common/error.h"
#include "lease/lease.h"

namespace hostport::agent::api {

/// Alone in its directory, which pods mount read-only (a hostPath volume of /run/hostport/pod).
inline constexpr std::string_view kDefaultPodSocket = "/run/hostport/pod/pod.sock";
inline constexpr std::string_view kSelfPath = "/v1/self";
inline constexpr std::string_view kSelfPortsPath = "/v1/self/ports";  // + "/{name}"
inline constexpr std::string_view kSelfEnvPath = "/v1/self/env";
inline constexpr std::string_view kWaitParameter = "wait";
inline constexpr std::chrono::seconds kMaxPodWait{60};

/// `wait`: "10s", "1500ms" or "10" (seconds), 0 to kMaxPodWait. kInvalidArgument naming the
/// parameter and the value: `wait: "10m" is not a duration such as 10s or 500ms (at most 60s)`.
Result<std::chrono::milliseconds> parseWait(std::string_view text);

/// The answer of GET /v1/self for the leases of one network namespace (one per interface; a pod
/// with one network has one): the pod of the first, and every port of all, in lease order. Each
/// port as the control socket writes it (json_codec.h): name ("" for a static hostPort),
/// protocol, hostPort, containerPort, count, hostIP when one, static.
nlohmann::json selfBody(const std::vector<Lease>& leases);
/// The same for `pod`, which may hold no lease yet (its ports then an empty list): what a CSI
/// volume holds before the pod's sandbox is set up.
nlohmann::json selfBody(const PodIdentity& pod, const std::vector<Lease>& leases);

/// The port named `name` among the leases' ports (the first, in lease order); nullopt when none.
std::optional<PortGrant> namedPort(const std::vector<Lease>& leases, std::string_view name);

/// GET /v1/self/ports/{name}'s text: "30123\n", or "20000-20009\n" for a range of ports.
std::string portText(const PortGrant& grant);

/// The environment variable of the port named `name`: "HOSTPORT_" and the name upper-cased, each
/// '-' an '_' ("rtp-in" -> HOSTPORT_RTP_IN). A port name is a DNS label, so two names never make
/// one variable.
std::string envName(std::string_view name);

/// The leases' named ports as an env file (KEP-3721's format, and a shell's `.`): one
/// `HOSTPORT_<NAME>=<port>` line per named port, in lease order, the first of a name winning as
/// in namedPort(); a range as `HOSTPORT_<NAME>=first-last` with `HOSTPORT_<NAME>_FIRST` and
/// `HOSTPORT_<NAME>_LAST`. Static hostPorts have no name and no line; no named port: "".
std::string envText(const std::vector<Lease>& leases);

/// "/v1/self", "/v1/self?wait=10s", "/v1/self/ports/web?wait=10s" (name percent-encoded).
std::string selfTarget(std::string_view portName, std::optional<std::chrono::seconds> wait);
/// "/v1/self/env", "/v1/self/env?wait=10s".
std::string selfEnvTarget(std::optional<std::chrono::seconds> wait);

}  // namespace hostport::agent::api
