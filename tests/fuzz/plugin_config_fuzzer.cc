// The network configuration a runtime writes on the plugin's stdin: our options, runtimeConfig
// (portMappings, the pod's annotations) and prevResult (cni-plugin/plugin_config.h,
// prev_result.h), read as ADD, CHECK and GC read them. Invariants: accepted values keep their
// documented bounds; prevResult's addresses survive conversion to every CNI version; a picked
// container address passes common/pod_address.h; and an ADD's forwards, planned as the
// dispatcher plans them, pass every check of plan_check.h.

#include <string>

#include "annotations/port_annotations.h"
#include "cni-plugin/cni_version.h"
#include "cni-plugin/plugin_config.h"
#include "cni-plugin/prev_result.h"
#include "common/pod_address.h"
#include "forwards/lease_forwards.h"
#include "tests/fuzz/fuzz_check.h"
#include "tests/fuzz/plan_check.h"

namespace {

namespace cni = hostport::cni;
namespace nft = hostport::nft;

void checkBounds(const cni::PluginConfig& config) {
  FUZZ_CHECK(config.statusGraceSeconds <= 86400);
  FUZZ_CHECK(config.stateDir.starts_with('/'));
  FUZZ_CHECK(config.staticPorts || config.portMappings.empty());
  for (const auto& mapping : config.portMappings) {
    FUZZ_CHECK(mapping.hostPort != 0 && mapping.containerPort != 0);
  }
  for (const auto* conditions : {&config.conditionsV4, &config.conditionsV6}) {
    if (conditions->empty()) continue;
    const auto again = nft::validateConditions({*conditions});
    FUZZ_CHECK(again.has_value() && *again == *conditions);
  }
}

/// Every version the plugin answers in carries the same addresses.
void checkConversions(const nlohmann::json& prevResult,
                      const std::vector<hostport::IpPrefix>& addresses) {
  for (const auto& version : cni::supportedVersions()) {
    const auto converted = cni::convertResult(prevResult, addresses, version);
    if (!converted) continue;  // a version that cannot carry this result: an error, not a crash
    const auto again = cni::resultAddresses(*converted);
    FUZZ_CHECK(again.has_value() && *again == addresses);
  }
}

/// ADD in standalone mode: the runtime's portMappings to the addresses prevResult names.
void checkAddPlan(const cni::PluginConfig& config) {
  if (!config.prevResult) return;
  const auto addresses = cni::resultAddresses(*config.prevResult);
  if (!addresses) return;
  checkConversions(*config.prevResult, *addresses);
  const auto pod = cni::containerAddresses(*config.prevResult, *addresses, "eth0");
  if (!pod) return;
  // Only addresses a pod may have become DNAT targets and pod subnets (issue 29).
  for (const auto& address : {pod->v4, pod->v6}) {
    FUZZ_CHECK(!address || !hostport::podAddressProblem(*address));
  }
  // What the plugin records for the agent (dispatcher.cc's forwardingOf).
  const hostport::Forwarding forwarding{.network = config.name,
                                        .podV4 = pod->v4,
                                        .podV6 = pod->v6,
                                        .snat = config.snat,
                                        .masqAll = config.masqAll,
                                        .conditionsV4 = config.conditionsV4,
                                        .conditionsV6 = config.conditionsV6};
  const auto plan = nft::planAttachment("fuzz/eth0", config.portMappings,
                                        hostport::forwards::podTargetOf(forwarding));
  if (plan) hostport::fuzz::checkRules(plan->rules);
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const auto config = cni::parsePluginConfig(hostport::fuzz::textOf(data, size));
  if (!config) return 0;
  checkBounds(*config);
  (void)cni::parseValidAttachments(*config);  // GC
  (void)hostport::annotations::parsePortAnnotations(
      config->podAnnotations);  // agent mode's request
  checkAddPlan(*config);
  return 0;
}
