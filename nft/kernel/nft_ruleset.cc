#include "nft/kernel/nft_ruleset.h"

#include <algorithm>
#include <iterator>

#include "nft/commands.h"
#include "nft/table_layout.h"

namespace hostport::nft::kernel {
namespace {

// A concurrent DEL of the same owner can delete an element between our finding it and our
// transaction; the transaction then fails whole and we look again.
constexpr int kRemoveAttempts = 3;

/// What the attachment owns; with kWithPodSubnets, also the shared subnets it needs.
enum class Subnets { kWithout, kWithPodSubnets };
std::vector<SetElement> elementsOf(const AttachmentRules& rules, Subnets subnets) {
  std::vector<SetElement> elements;
  for (const auto& forward : rules.forwards) elements.push_back(elementOf(forward, rules.owner));
  for (const auto& masquerade : rules.masquerades) {
    elements.push_back(elementOf(masquerade, rules.owner));
  }
  if (subnets == Subnets::kWithPodSubnets) {
    for (const auto& subnet : rules.podSubnets) elements.push_back(podSubnetElement(subnet));
  }
  return elements;
}

AttachmentRules withoutPodSubnets(AttachmentRules rules) {
  rules.podSubnets.clear();
  return rules;
}

std::vector<SetElement> elementsOf(const TableState& state) {
  std::vector<SetElement> elements;
  for (const auto& installed : state.forwards) {
    elements.push_back(elementOf(installed.forward, installed.owner));
  }
  for (const auto& installed : state.masquerades) {
    elements.push_back(elementOf(installed.masquerade, installed.owner));
  }
  return elements;
}

}  // namespace

Result<std::unique_ptr<NftRuleset>> NftRuleset::create() {
  HOSTPORT_TRY(ElementTable elements, ElementTable::open());
  return std::unique_ptr<NftRuleset>(new NftRuleset(std::move(elements)));
}

Result<NftContext*> NftRuleset::context() {
  if (!context_) {
    HOSTPORT_TRY(NftContext created, NftContext::create());
    context_.emplace(std::move(created));
  }
  return &*context_;
}

Result<void> NftRuleset::ensureTables() {
  auto done = elements_.layOut();
  if (!done) return withContext(done.error(), "creating the hostport tables");
  return {};
}

Result<void> NftRuleset::install(const AttachmentRules& rules) {
  if (rules.empty()) return {};
  auto installed = installOnce(rules);
  if (!installed && isAlreadyExists(installed.error()) && !rules.podSubnets.empty()) {
    // The kernel refuses a pod subnet nested in one that is there (another network's) as EEXIST
    // too. Without the subnets, EEXIST can only be a held key; with it gone, the subnet there
    // serves this pod (table_state.h, diff).
    installed = installOnce(withoutPodSubnets(rules));
  }
  if (installed) return {};
  if (isAlreadyExists(installed.error())) {
    return std::unexpected(describeConflict(installed.error(), rules));
  }
  if (installed.error().code == ErrorCode::kInvalidArgument) return installed;
  return withContext(installed.error(), "installing the forwards of " + rules.owner);
}

Result<void> NftRuleset::installMany(const std::vector<const AttachmentRules*>& attachments) {
  std::vector<SetElement> elements;
  std::vector<IpPrefix> subnets;
  for (const AttachmentRules* rules : attachments) {
    if (rules->hasConditions()) {
      return fail(ErrorCode::kInvalidArgument,
                  "the forwards of " + rules->owner + " have conditions: install them alone");
    }
    std::ranges::move(elementsOf(*rules, Subnets::kWithout), std::back_inserter(elements));
    for (const IpPrefix& subnet : rules->podSubnets) {
      if (std::ranges::find(subnets, subnet) == subnets.end()) subnets.push_back(subnet);
    }
  }
  for (const IpPrefix& subnet : subnets) elements.push_back(podSubnetElement(subnet));
  auto added = elements_.change(ElementChange::kAdd, elements);
  if (added || !isNotFound(added.error())) return added;
  return elements_.layOut(elements);
}

Result<void> NftRuleset::installOnce(const AttachmentRules& rules) {
  if (rules.hasConditions()) return installConditional(rules);
  // The common case touches nothing but our elements. Re-sending the layout with every ADD
  // would flush and re-add the fixed rules: the kernel then re-checks every element of the maps
  // (O(N)) and closing the socket waits for an RCU grace period (~10 ms).
  const auto elements = elementsOf(rules, Subnets::kWithPodSubnets);
  auto added = elements_.change(ElementChange::kAdd, elements);
  if (added || !isNotFound(added.error())) return added;
  // A table or set is missing: the first ADD on this node, or someone deleted it. The layout
  // rides in the same transaction, so a failed ADD never leaves it half made.
  return elements_.layOut(elements);
}

Result<void> NftRuleset::installConditional(const AttachmentRules& rules) {
  HOSTPORT_TRY(auto* nft, context());
  const std::string commands = installCommands(rules);
  // Conditions are user text: let nft judge them before anything is committed, so a bad one is a
  // config error (CNI code 7), not a kernel failure. nft judges against the tables, so a missing
  // one is laid out first (an empty layout is no attachment's state).
  auto checked = nft->check(commands);
  if (!checked && isNotFound(checked.error())) {
    HOSTPORT_TRY_VOID(elements_.layOut());
    checked = nft->check(commands);
  }
  if (!checked && !isAlreadyExists(checked.error())) {
    if (checked.error().code != ErrorCode::kKernel) return checked;  // nft did not run
    return fail(ErrorCode::kInvalidArgument,
                "conditionsV4/conditionsV6 refused by nftables: " + checked.error().message);
  }
  HOSTPORT_TRY_VOID(nft->run(commands));
  return {};
}

Result<void> NftRuleset::scanElements(TableScan& scan) {
  HOSTPORT_TRY_VOID(elements_.scan(scan));
  HOSTPORT_TRY(const std::vector<InstalledForward> rules, elements_.conditionalRules());
  for (const InstalledForward& rule : rules)
    scan.forward(rule.owner, rule.forward, rule.ruleHandle);
  return {};
}

Result<std::optional<uint32_t>> NftRuleset::generation() {
  HOSTPORT_TRY(const uint32_t id, elements_.generation());
  return std::optional(id);
}

Result<void> NftRuleset::removePodSubnets(const std::vector<IpPrefix>& subnets) {
  std::vector<SetElement> elements;
  for (const auto& subnet : subnets) elements.push_back(podSubnetElement(subnet));
  auto deleted = elements_.change(ElementChange::kDelete, elements);
  if (deleted || isNotFound(deleted.error())) return {};
  return withContext(deleted.error(), "removing pod subnets");
}

Error NftRuleset::describeConflict(Error error, const AttachmentRules& rules) {
  error.code = ErrorCode::kConflict;
  error.details = error.message;
  error.message = "a host port of " + rules.owner + " is already forwarded for another attachment";
  auto state = elements_.read();
  if (!state) return error;
  for (const auto& wanted : rules.forwards) {
    for (const auto& held : state->forwards) {
      const auto& have = held.forward;
      if (held.owner != rules.owner && have.protocol == wanted.protocol &&
          have.hostPort == wanted.hostPort && have.hostIp == wanted.hostIp &&
          have.family() == wanted.family()) {
        error.message = "host port " + describe(wanted) + " is already forwarded for " +
                        (held.owner.empty() ? "an untagged element" : held.owner) + " (" +
                        describe(have) + ")";
        return error;
      }
    }
  }
  return error;
}

Result<TableState> NftRuleset::ownedState(const std::string& owner) {
  HOSTPORT_TRY(const bool conditional, elements_.hasConditionalRules(owner));
  HOSTPORT_TRY(const TableState state, conditional ? readState() : elements_.read(&owner));
  return state.ownedBy(owner);
}

Result<AttachmentRules> NftRuleset::remove(const std::string& owner) {
  return removeFound(owner, [&] { return ownedState(owner); });
}

Result<AttachmentRules> NftRuleset::removeFound(const std::string& owner,
                                                const std::function<Result<TableState>()>& find) {
  for (int attempt = 1;; ++attempt) {
    HOSTPORT_TRY(const TableState owned, find());
    if (owned.empty()) return AttachmentRules{owner, {}, {}, {}};
    const bool rules = std::ranges::any_of(owned.forwards, [](const InstalledForward& installed) {
      return installed.ruleHandle.has_value();
    });
    Result<void> done;
    if (rules) {
      HOSTPORT_TRY(auto* nft, context());
      auto ran = nft->run(removeCommands(owned));
      if (!ran) done = std::unexpected(ran.error());
    } else {
      done = elements_.change(ElementChange::kDelete, elementsOf(owned));
    }
    if (done) return owned.rulesOf(owner);
    if (!isNotFound(done.error()) || attempt == kRemoveAttempts) {
      return withContext(done.error(), "removing the forwards of " + owner);
    }
  }
}

Result<void> NftRuleset::removeExact(const AttachmentRules& rules) {
  if (rules.empty()) return {};
  if (!rules.hasConditions()) {
    auto deleted = elements_.change(ElementChange::kDelete, elementsOf(rules, Subnets::kWithout));
    if (deleted) return {};
    if (!isNotFound(deleted.error())) {
      return withContext(deleted.error(), "removing the forwards of " + rules.owner);
    }
  }
  HOSTPORT_TRY_VOID(remove(rules.owner));
  return {};
}

Result<AttachmentRules> NftRuleset::removeIfOwned(const AttachmentRules& planned) {
  if (planned.hasConditions()) return remove(planned.owner);
  return removeFound(planned.owner, [&]() -> Result<TableState> {
    HOSTPORT_TRY(std::vector<SetElement> held,
                 elements_.lookUp(elementsOf(planned, Subnets::kWithout)));
    std::erase_if(held, [&](const SetElement& element) {
      return commentOf(element.userdata) != planned.owner;
    });
    return stateOf(held);
  });
}

Result<AttachmentRules> NftRuleset::listOwned(const std::string& owner) {
  HOSTPORT_TRY(const TableState owned, ownedState(owner));
  AttachmentRules rules = owned.rulesOf(owner);
  rules.podSubnets = owned.podSubnets;
  return rules;
}

Result<TableState> NftRuleset::readState() {
  HOSTPORT_TRY(auto* nft, context());
  TableState state;
  for (const Family family : {Family::kIPv4, Family::kIPv6}) {
    auto listing =
        nft->list("list table " + std::string(nftFamily(family)) + " " + std::string(kTableName));
    if (!listing) {
      if (isNotFound(listing.error())) continue;
      return withContext(listing.error(), "reading the hostport table");
    }
    HOSTPORT_TRY_VOID(parseTableListing(*listing, state));
  }
  return state;
}

}  // namespace hostport::nft::kernel
