// hostport.io/ports, hostport.io/pool and hostport.io/sticky as a pod author writes them
// (annotations/port_annotations.h). The input is the three values separated by NUL bytes; missing
// ones are absent, each read as a pod's and as a hostNetwork pod's. Invariants: what parses obeys
// the documented grammar and bounds, prints back to an annotation that parses to the same value,
// and (a pod's) plans into forwards that pass every check of plan_check.h.

#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "annotations/port_annotations.h"
#include "common/identifiers.h"
#include "tests/fuzz/fuzz_check.h"
#include "tests/fuzz/plan_check.h"

namespace {

using hostport::DynamicPortRequest;
namespace annotations = hostport::annotations;

std::vector<std::string_view> splitAtNul(std::string_view text) {
  std::vector<std::string_view> parts;
  for (std::size_t start = 0;;) {
    const auto nul = text.find('\0', start);
    parts.push_back(text.substr(start, nul - start));
    if (nul == std::string_view::npos) return parts;
    start = nul + 1;
  }
}

/// `name=first[-last]/protocol` (a hostNetwork pod's: `name[*count]/protocol`), the canonical
/// spelling of one request.
std::string entryText(const DynamicPortRequest& request, annotations::PodNetwork network) {
  std::string text = request.name;
  if (network == annotations::PodNetwork::kHost) {
    if (request.count > 1) text += "*" + std::to_string(request.count);
  } else {
    text += "=" + std::to_string(request.containerPort);
    if (request.count > 1) text += "-" + std::to_string(request.containerPort + request.count - 1);
  }
  return text + "/" + std::string(hostport::protocolName(request.protocol));
}

nlohmann::json annotationsOf(const annotations::PortAnnotations& parsed,
                             annotations::PodNetwork network) {
  std::string ports;
  for (const auto& request : parsed.dynamics) {
    if (!ports.empty()) ports += ",";
    ports += entryText(request, network);
  }
  nlohmann::json annotations = {{annotations::kPortsAnnotation, ports},
                                {annotations::kStickyAnnotation, parsed.sticky ? "true" : "false"}};
  if (!parsed.pool.empty()) annotations[annotations::kPoolAnnotation] = parsed.pool;
  return annotations;
}

void checkGrammar(const annotations::PortAnnotations& parsed, annotations::PodNetwork network) {
  FUZZ_CHECK(parsed.dynamics.size() <= hostport::kMaxPortsPerRequest);
  FUZZ_CHECK(parsed.pool.empty() || hostport::isDnsLabel(parsed.pool));
  for (std::size_t i = 0; i < parsed.dynamics.size(); ++i) {
    const auto& request = parsed.dynamics[i];
    FUZZ_CHECK(hostport::isDnsLabel(request.name));
    FUZZ_CHECK(request.count >= 1 && request.count <= hostport::kMaxRangeWidth);
    if (network == annotations::PodNetwork::kHost) {
      FUZZ_CHECK(request.containerPort == 0);  // its process binds the host port itself
    } else {
      FUZZ_CHECK(request.containerPort >= 1);
      FUZZ_CHECK(request.containerPort + request.count - 1 <= 65535);
    }
    for (std::size_t j = 0; j < i; ++j) FUZZ_CHECK(parsed.dynamics[j].name != request.name);
  }
}

/// What the plugin asks the agent for: the annotations' requests, forwarded to a pod of both
/// families.
hostport::AllocationRequest requestOf(const annotations::PortAnnotations& parsed) {
  hostport::AllocationRequest request{.key = {"fuzz", "eth0"},
                                      .pool = parsed.pool,
                                      .dynamics = parsed.dynamics,
                                      .sticky = parsed.sticky};
  request.forwarding = hostport::Forwarding{
      .network = "fuzz",
      .podV4 = hostport::IpPrefix::parse("10.88.0.5/16").value(),
      .podV6 = hostport::IpPrefix::parse("fd00::5/64").value(),
  };
  return request;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const auto parts = splitAtNul(hostport::fuzz::textOf(data, size));
  nlohmann::json annotations = nlohmann::json::object();
  const std::string_view keys[] = {annotations::kPortsAnnotation, annotations::kPoolAnnotation,
                                   annotations::kStickyAnnotation};
  for (std::size_t i = 0; i < parts.size() && i < std::size(keys); ++i) {
    // Annotation values are strings; the JSON reader would refuse invalid UTF-8 before us.
    annotations[keys[i]] = std::string(parts[i]);
  }
  for (const auto network : {annotations::PodNetwork::kOwn, annotations::PodNetwork::kHost}) {
    const auto parsed = annotations::parsePortAnnotations(annotations, network);
    if (!parsed) continue;
    checkGrammar(*parsed, network);
    const auto again = annotations::parsePortAnnotations(annotationsOf(*parsed, network), network);
    FUZZ_CHECK(again.has_value() && *again == *parsed);
    if (network == annotations::PodNetwork::kOwn) {
      hostport::fuzz::checkLeasePlan(hostport::fuzz::leaseAtOwnNumbers(requestOf(*parsed)));
    }
  }
  return 0;
}
