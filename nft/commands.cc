#include "nft/commands.h"

#include "nft/table_layout.h"

namespace hostport::nft {
namespace {

std::string tableRef(Family family) {
  return std::string(nftFamily(family)) + " " + std::string(kTableName);
}

std::string mapKey(const Forward& forward) {
  std::string key;
  if (forward.hostIp) key = forward.hostIp->str() + " . ";
  return key + std::string(protocolName(forward.protocol)) + " . " +
         std::to_string(forward.hostPort);
}

std::string mapName(const Forward& forward) {
  return std::string(forward.hostIp ? kHostIpPortsMap : kPortsMap);
}

std::string masqueradeSet(const Masquerade& masquerade) {
  return std::string(masquerade.scope == MasqueradeScope::kPodSubnet ? kSnatPodsSet : kMasqAllSet);
}

std::string comment(const std::string& owner) { return " comment \"" + owner + "\""; }

/// The user's conditions, then our own part, always last and in this order:
/// `meta l4proto P th dport N [ip daddr H] dnat ip to C:CP`. Reading it back
/// (table_state.cc) walks from the rule's end and stops where our part does, so what the user
/// wrote is never interpreted: the host IP match sits after the port match, where no user match
/// can be (the user's `ip daddr` would otherwise pass for ours). A statement ends every rule, and
/// conditions can hold none (validateConditions), so nothing of the user's follows ours; our part
/// starts with a keyword, so no trailing operator of theirs can bind to it (nft refuses it).
std::string conditionalRule(const Forward& forward, const std::string& owner) {
  const std::string f(nftFamily(forward.family()));
  std::string rule = forward.conditions + " meta l4proto " +
                     std::string(protocolName(forward.protocol)) + " th dport " +
                     std::to_string(forward.hostPort);
  if (forward.hostIp) rule += " " + f + " daddr " + forward.hostIp->str();
  rule += " dnat " + f + " to " + describeEndpoint(forward.containerIp, forward.containerPort);
  return "add rule " + tableRef(forward.family()) + " " + std::string(kConditionalChain) + " " +
         rule + comment(owner) + "\n";
}

}  // namespace

std::string installCommands(const AttachmentRules& rules) {
  std::string out;
  for (const auto& forward : rules.forwards) {
    if (!forward.conditions.empty()) {
      out += conditionalRule(forward, rules.owner);
      continue;
    }
    out += "add element " + tableRef(forward.family()) + " " + mapName(forward) + " { " +
           mapKey(forward) + comment(rules.owner) + " : " + forward.containerIp.str() + " . " +
           std::to_string(forward.containerPort) + " }\n";
  }
  for (const auto& masquerade : rules.masquerades) {
    out += "add element " + tableRef(masquerade.family()) + " " + masqueradeSet(masquerade) +
           " { " + masquerade.podIp.str() + comment(rules.owner) + " }\n";
  }
  for (const auto& subnet : rules.podSubnets) {
    const std::string network = subnet.network().str();
    out += "add element " + tableRef(subnet.address.family()) + " " + std::string(kPodSubnetsSet) +
           " { " + network + " . " + network + " }\n";
  }
  return out;
}

std::string removeCommands(const TableState& owned) {
  std::string out;
  for (const auto& installed : owned.forwards) {
    const auto& forward = installed.forward;
    if (installed.ruleHandle) {
      out += "delete rule " + tableRef(forward.family()) + " " + std::string(kConditionalChain) +
             " handle " + std::to_string(*installed.ruleHandle) + "\n";
      continue;
    }
    out += "delete element " + tableRef(forward.family()) + " " + mapName(forward) + " { " +
           mapKey(forward) + " }\n";
  }
  for (const auto& installed : owned.masquerades) {
    const auto& masquerade = installed.masquerade;
    out += "delete element " + tableRef(masquerade.family()) + " " + masqueradeSet(masquerade) +
           " { " + masquerade.podIp.str() + " }\n";
  }
  return out;
}

}  // namespace hostport::nft
