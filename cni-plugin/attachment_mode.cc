#include "cni-plugin/attachment_mode.h"

#include "nft/table_state.h"

namespace hostport::cni {
namespace {

/// CHECK's verdict: the first difference, as kNotFound naming the element and its owner. Missing
/// forwards come first, then unexpected forwards, then missing masquerades and pod subnets. An
/// unexpected masquerade passes: it hides more client addresses from this pod, but breaks no
/// forward and holds no port.
Result<void> firstDifference(const nft::RulesDiff& difference, const std::string& owner) {
  if (!difference.missingForwards.empty()) {
    return fail(ErrorCode::kNotFound, "forward " +
                                          nft::describe(difference.missingForwards.front()) +
                                          " of " + owner + " is missing from table hostport");
  }
  if (!difference.unexpectedForwards.empty()) {
    return fail(ErrorCode::kNotFound, "table hostport holds an unexpected forward " +
                                          nft::describe(difference.unexpectedForwards.front()) +
                                          " for " + owner);
  }
  if (!difference.missingMasquerades.empty() || !difference.missingPodSubnets.empty()) {
    return fail(ErrorCode::kNotFound, difference.describeFirstMissing() + " of " + owner +
                                          " is missing from table hostport");
  }
  return {};
}

}  // namespace

Result<void> AttachmentMode::check(const PluginConfig& config) {
  HOSTPORT_TRY(const auto target, invocation_.attachment(config, "CHECK"));
  HOSTPORT_TRY(const auto mappings, granted(config));
  if (!mappings.empty()) {
    HOSTPORT_TRY_VOID(requireContainerAddress(target.addresses, invocation_.env().ifname));
  }
  HOSTPORT_TRY(const auto planned, invocation_.plan(config, target, mappings));
  HOSTPORT_TRY(auto* tables, invocation_.ruleset());
  HOSTPORT_TRY(const auto installed, tables->listOwned(target.owner));
  return firstDifference(nft::diff(planned.rules, installed), target.owner);
}

}  // namespace hostport::cni
