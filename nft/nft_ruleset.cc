#include "nft/nft_ruleset.h"

#include <algorithm>

#include "nft/commands.h"
#include "nft/table_layout.h"

namespace hostport::nft {
namespace {

// A concurrent DEL of the same owner can delete an element between our listing and our
// transaction; the transaction then fails whole and we list again.
constexpr int kRemoveAttempts = 3;

}  // namespace

Result<std::unique_ptr<NftRuleset>> NftRuleset::create() {
  auto context = NftContext::create();
  if (!context) return std::unexpected(context.error());
  return std::unique_ptr<NftRuleset>(new NftRuleset(std::move(*context)));
}

namespace {

std::string bothLayouts() {
  return tableLayoutCommands(Family::kIPv4) + tableLayoutCommands(Family::kIPv6);
}

}  // namespace

Result<void> NftRuleset::ensureTables() {
  auto done = context_.run(bothLayouts());
  if (!done) return withContext(done.error(), "creating the hostport tables");
  return {};
}

Result<void> NftRuleset::install(const AttachmentRules& rules) {
  if (rules.empty()) return {};
  // The layout rides in the same transaction, so it is repaired by every ADD and never left
  // behind by a failed one.
  const std::string commands = bothLayouts() + installCommands(rules);
  const bool conditional = std::ranges::any_of(
      rules.forwards, [](const Forward& forward) { return !forward.conditions.empty(); });
  if (conditional) {
    // Conditions are user text: let nft judge them before anything is committed, so a bad one
    // is a config error (CNI code 7), not a kernel failure.
    if (auto checked = context_.check(commands); !checked && !isAlreadyExists(checked.error())) {
      return fail(ErrorCode::kInvalidArgument,
                  "conditionsV4/conditionsV6 refused by nftables: " + checked.error().message);
    }
  }
  auto done = context_.run(commands);
  if (done) return {};
  if (isAlreadyExists(done.error())) return std::unexpected(describeConflict(done.error(), rules));
  return withContext(done.error(), "installing the forwards of " + rules.owner);
}

Error NftRuleset::describeConflict(Error error, const AttachmentRules& rules) {
  error.code = ErrorCode::kConflict;
  error.details = error.message;
  error.message = "a host port of " + rules.owner + " is already forwarded for another attachment";
  auto state = readState();
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

Result<AttachmentRules> NftRuleset::remove(const std::string& owner) {
  for (int attempt = 1;; ++attempt) {
    auto state = readState();
    if (!state) return std::unexpected(state.error());
    const TableState owned = state->ownedBy(owner);
    if (owned.empty()) return AttachmentRules{owner, {}, {}};
    auto done = context_.run(removeCommands(owned));
    if (done) return owned.rulesOf(owner);
    if (!isNotFound(done.error()) || attempt == kRemoveAttempts) {
      return withContext(done.error(), "removing the forwards of " + owner);
    }
  }
}

Result<AttachmentRules> NftRuleset::listOwned(const std::string& owner) {
  auto state = readState();
  if (!state) return std::unexpected(state.error());
  return state->rulesOf(owner);
}

Result<TableState> NftRuleset::readState() {
  TableState state;
  for (const Family family : {Family::kIPv4, Family::kIPv6}) {
    auto listing = context_.list("list table " + std::string(nftFamily(family)) + " " +
                                 std::string(kTableName));
    if (!listing) {
      if (isNotFound(listing.error())) continue;
      return withContext(listing.error(), "reading the hostport table");
    }
    auto parsed = parseTableListing(*listing, state);
    if (!parsed) return std::unexpected(parsed.error());
  }
  return state;
}

}  // namespace hostport::nft
