#pragma once
// What the admission server reads of a Pod object: its hostport annotations, hostNetwork, and
// each app container's name, ports and hostport resources. Read from the review's object, which
// the API server has already decoded and defaulted; still checked field by field (a fuzzer, or a
// future field, must not crash the webhook), each error naming its path from `object`.

#include <cstdint>
#include <map>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "common/error.h"
#include "common/ip_address.h"
#include "common/protocol.h"

namespace hostport::admission {

struct ContainerPortView {
  std::string name;  // "" when unnamed
  uint16_t containerPort = 0;
  uint16_t hostPort = 0;  // 0: none
  Protocol protocol = Protocol::kTcp;
  std::optional<IpAddress> hostIp;
};

struct ContainerView {
  std::string name;
  std::vector<ContainerPortView> ports;
  /// resources.requests and resources.limits, for the resources named hostport.io/<pool> only,
  /// as the object writes them ("3", "1k").
  std::map<std::string, std::string, std::less<>> requests;
  std::map<std::string, std::string, std::less<>> limits;
  bool hasResources = false;  // the object has resources (an object), hasRequests its requests
  bool hasRequests = false;
  bool hasLimits = false;
};

struct PodView {
  nlohmann::json annotations = nlohmann::json::object();  // metadata.annotations, strings only
  bool hasAnnotations = false;  // the object has metadata.annotations (a patch adds to it)
  bool hostNetwork = false;
  std::vector<ContainerView> containers;  // spec.containers, in order

  /// The index of the container named `name`; nullopt when none is.
  std::optional<std::size_t> containerNamed(std::string_view name) const;
};

/// At most this many containers and ports per container are read (Kubernetes sets no limit; a
/// pod beyond it is refused by name rather than walked).
inline constexpr std::size_t kMaxContainers = 256;
inline constexpr std::size_t kMaxPortsPerContainer = 1024;

/// Reads `pod` (a review's object or oldObject). kInvalidArgument naming the path
/// (`object.spec.containers[1].ports[0].hostPort: 70000 must be an integer 0..65535`).
Result<PodView> readPod(const nlohmann::json& pod);

/// The annotations of `pod` whose key starts with `prefix`, an object (possibly empty); a pod
/// whose metadata.annotations is not an object has none.
nlohmann::json annotationsWithPrefix(const nlohmann::json& pod, std::string_view prefix);

}  // namespace hostport::admission
