#include "tests/fuzz/plan_check.h"

#include <algorithm>
#include <string>
#include <string_view>

#include "forwards/lease_forwards.h"
#include "nft/commands.h"
#include "nft/set_element.h"
#include "nft/table_layout.h"
#include "tests/fuzz/fuzz_check.h"

namespace hostport::fuzz {
namespace {

constexpr std::size_t kMaxPlannedPorts = 256;

void checkConditions(const std::string& conditions) {
  if (conditions.empty()) return;
  const auto again = nft::validateConditions({conditions});
  FUZZ_CHECK(again.has_value() && *again == conditions);
}

/// A conditional rule is the user's conditions, then our own part, last: what a listing reads
/// back (nft/table_state.h), whatever the conditions hold.
void checkConditionalRule(std::string_view line, const nft::Forward& forward,
                          const std::string& owner) {
  const std::string family(nft::nftFamily(forward.family()));
  std::string ours = " meta l4proto " + std::string(protocolName(forward.protocol)) + " th dport " +
                     std::to_string(forward.hostPort);
  if (forward.hostIp) ours += " " + family + " daddr " + forward.hostIp->str();
  ours += " dnat " + family + " to " +
          describeEndpoint(forward.containerIp, forward.containerPort) + " comment \"" + owner +
          "\"";
  FUZZ_CHECK(line == "add rule " + family + " hostport conditional " + forward.conditions + ours);
}

void checkCommandText(const nft::AttachmentRules& rules) {
  const std::string text = nft::installCommands(rules);
  const auto lines = static_cast<std::size_t>(std::ranges::count(text, '\n'));
  FUZZ_CHECK(lines == rules.forwards.size() + rules.masquerades.size() + rules.podSubnets.size());
  FUZZ_CHECK(text.empty() || text.back() == '\n');
  std::string_view rest = text;
  for (std::size_t index = 0; !rest.empty(); ++index) {
    FUZZ_CHECK(rest.starts_with("add element ") || rest.starts_with("add rule "));
    const std::string_view line = rest.substr(0, rest.find('\n'));
    // The forwards' lines come first, in order.
    if (index < rules.forwards.size() && !rules.forwards[index].conditions.empty()) {
      checkConditionalRule(line, rules.forwards[index], rules.owner);
    }
    rest.remove_prefix(line.size() + 1);
  }
}

void checkElements(const nft::AttachmentRules& rules) {
  for (const auto& forward : rules.forwards) {
    if (!forward.conditions.empty()) continue;  // a rule of the conditional chain, not an element
    const auto installed = nft::forwardOf(nft::elementOf(forward, rules.owner));
    FUZZ_CHECK(installed.has_value());
    FUZZ_CHECK(installed->owner == rules.owner && installed->forward == forward);
  }
  for (const auto& masquerade : rules.masquerades) {
    const auto installed = nft::masqueradeOf(nft::elementOf(masquerade, rules.owner));
    FUZZ_CHECK(installed.has_value());
    FUZZ_CHECK(installed->owner == rules.owner && installed->masquerade == masquerade);
  }
}

}  // namespace

void checkRules(const nft::AttachmentRules& rules) {
  FUZZ_CHECK(nft::isOwnerTag(rules.owner));
  for (const auto& forward : rules.forwards) {
    FUZZ_CHECK(forward.hostPort != 0 && forward.containerPort != 0);
    checkConditions(forward.conditions);
  }
  checkCommandText(rules);
  checkElements(rules);
}

Lease leaseAtOwnNumbers(const AllocationRequest& request) {
  Lease lease{.key = request.key,
              .pod = request.pod,
              .netns = request.netns,
              .pool = request.pool,
              .forwarding = request.forwarding,
              .sticky = request.sticky};
  for (const auto& claim : request.statics) {
    lease.ports.push_back({.protocol = claim.protocol,
                           .hostPort = claim.hostPort,
                           .containerPort = claim.containerPort,
                           .hostIp = claim.hostIp,
                           .isStatic = true});
  }
  for (const auto& dynamic : request.dynamics) {
    lease.ports.push_back({.name = dynamic.name,
                           .protocol = dynamic.protocol,
                           .hostPort = dynamic.containerPort,
                           .containerPort = dynamic.containerPort,
                           .count = dynamic.count});
  }
  return lease;
}

void checkLeasePlan(const Lease& lease) {
  // The bounds allow 256 rows of 1024 ports: planning thousands of ports takes milliseconds an
  // input (a hundredth of the runs) and covers nothing a few ports do not, so big leases are
  // left to the unit tests.
  std::size_t ports = 0;
  for (const auto& grant : lease.ports) ports += grant.count;
  if (ports > kMaxPlannedPorts) return;
  const auto plan = forwards::planOf(lease);
  if (!plan) return;
  checkRules(plan->rules);
}

}  // namespace hostport::fuzz
