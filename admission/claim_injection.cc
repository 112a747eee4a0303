#include "admission/claim_injection.h"

#include "annotations/annotation_names.h"
#include "common/ascii.h"
#include "common/quote.h"

namespace hostport::admission {
namespace {

using nlohmann::json;

/// "TCP", "UDP", "SCTP": how a pod spec writes a protocol.
std::string specProtocol(Protocol protocol) { return ascii::uppercase(protocolName(protocol)); }

}  // namespace

Result<void> injectClaims(const PodView& pod, std::size_t target,
                          const std::vector<DynamicPortRequest>& dynamics,
                          const std::vector<ClaimedEntry>& claimed, const std::string& holder,
                          JsonPatch& patch) {
  json added = json::array();  // ports no container declares, for `target`
  for (std::size_t row = 0; row < dynamics.size(); ++row) {
    const DynamicPortRequest& entry = dynamics[row];
    const ClaimedEntry& block = claimed[row];
    for (uint32_t offset = 0; offset < entry.count; ++offset) {
      const auto hostPort = static_cast<uint16_t>(block.first + offset);
      // A hostNetwork pod's entry names no containerPort: the kubelet wants its hostPort and
      // containerPort equal.
      const auto containerPort =
          entry.containerPort == 0 ? hostPort : static_cast<uint16_t>(entry.containerPort + offset);
      for (const Protocol protocol : kernelProtocols(entry.protocol)) {
        bool declared = false;
        for (std::size_t c = 0; c < pod.containers.size() && !declared; ++c) {
          const auto& ports = pod.containers[c].ports;
          for (std::size_t p = 0; p < ports.size(); ++p) {
            if (ports[p].containerPort != containerPort || ports[p].protocol != protocol) continue;
            declared = true;
            if (ports[p].hostPort == hostPort) break;  // a reinvoked webhook's own
            if (ports[p].hostPort != 0) {
              return fail(ErrorCode::kInvalidArgument,
                          "container " + quoteText(pod.containers[c].name) + " port " +
                              std::to_string(containerPort) + "/" + specProtocol(protocol) +
                              " has hostPort " + std::to_string(ports[p].hostPort) +
                              ", but entry " + quoteText(entry.name) +
                              " of hostport.io/ports asks a cluster pool, whose claim sets the "
                              "hostPort: remove it");
            }
            patch.add(jsonPointer({"spec", "containers", std::to_string(c), "ports",
                                   std::to_string(p), "hostPort"}),
                      hostPort);
            break;
          }
        }
        if (!declared) {
          added.push_back({{"containerPort", containerPort},
                           {"hostPort", hostPort},
                           {"protocol", specProtocol(protocol)}});
        }
      }
    }
  }
  if (!added.empty()) {
    if (pod.containers[target].ports.empty()) {
      patch.add(jsonPointer({"spec", "containers", std::to_string(target), "ports"}), added);
    } else {
      for (const auto& port : added) {
        patch.add(jsonPointer({"spec", "containers", std::to_string(target), "ports", "-"}), port);
      }
    }
  }
  json notes = json::object();
  for (const auto& block : claimed) {
    notes[std::string(annotations::kAllocatedAnnotationPrefix) + block.name] =
        PortRange{block.first, static_cast<uint16_t>(block.first + block.count - 1)}.str();
  }
  notes[std::string(annotations::kClaimHolderAnnotation)] = holder;
  if (!pod.hasAnnotations) {
    patch.add(jsonPointer({"metadata", "annotations"}), notes);
  } else {
    for (const auto& [key, value] : notes.items()) {
      patch.add(jsonPointer({"metadata", "annotations", key}), value);
    }
  }
  return {};
}

}  // namespace hostport::admission
