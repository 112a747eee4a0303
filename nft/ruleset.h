#pragma once
// The table API the plugin and the agent use. `Ruleset` is the seam tests fake; NftRuleset
// (nft_ruleset.h) is the kernel's: netlink, and the nft command for rules with conditions.

#include "nft/forward.h"
#include "nft/table_state.h"

namespace hostport::nft {

class Ruleset {
 public:
  virtual ~Ruleset() = default;

  /// Creates `table ip hostport` and `table ip6 hostport` with their fixed chains, maps and sets.
  /// Idempotent, and never touches elements that are already there.
  virtual Result<void> ensureTables() = 0;
  /// Adds every element and rule of one attachment, and the pod subnets it needs, in a single
  /// transaction: all or nothing, so a failed ADD leaves no element behind. When a table or set is
  /// missing, the layout is created in that same transaction; a layout that exists is left as it is
  /// (repairing an edited one is ensureTables()' job). A key held by another owner is
  /// ErrorCode::kConflict; conditions nft refuses are kInvalidArgument.
  virtual Result<void> install(const AttachmentRules& rules) = 0;
  /// install() for many attachments, none with conditions, in one transaction: all or nothing. The
  /// agent's reconciler restores a flushed map this way, thousands of elements per commit. An
  /// error does not say which attachment it was: install() each to learn that.
  virtual Result<void> installMany(const std::vector<const AttachmentRules*>& attachments) = 0;
  /// Deletes everything tagged with `owner` in one transaction and returns what it deleted.
  /// Nothing there (not even the tables) is success.
  virtual Result<AttachmentRules> remove(const std::string& owner) = 0;
  /// Deletes exactly `rules`, by key and without listing anything, in one transaction: the DEL
  /// of a writer that knows what it installed. When an element is already gone (someone flushed
  /// the map) or a forward has conditions (its rule's handle needs a listing), it falls back to
  /// remove(rules.owner).
  virtual Result<void> removeExact(const AttachmentRules& rules) = 0;
  /// Deletes those of `planned`'s forwards and masquerades that the kernel holds under
  /// `planned.owner`, each found by its key, in one transaction, and returns what it deleted:
  /// the DEL of a writer that knows what it may have installed but not whether it did (a DEL
  /// after a failed ADD must not take a key another owner holds). Costs the attachment's own
  /// elements at any N, where remove() lists every element. Forwards with conditions (rules,
  /// found only by a listing) go through remove(planned.owner).
  virtual Result<AttachmentRules> removeIfOwned(const AttachmentRules& planned) = 0;
  /// Every owner's elements in both families' maps and sets, and every rule of the conditional
  /// chain as an unidentified rule (its owner tag and handle: what it forwards, only
  /// listOwned() reads), each passed to `scan` as it is read: what the agent's reconciler compares
  /// with its leases, so an owner whose only trace is a rule is seen too. A missing table reads as
  /// empty. On an error, `scan` has seen part of the table.
  virtual Result<void> scanElements(TableScan& scan) = 0;
  /// The netns's nf_tables ruleset generation, which every committed transaction (anyone's)
  /// moves on: equal readings mean nothing changed in between. nullopt where it cannot be known.
  virtual Result<std::optional<uint32_t>> generation() = 0;
  /// Reads back what is installed for `owner` (for CHECK and DEL), with every pod subnet.
  virtual Result<AttachmentRules> listOwned(const std::string& owner) = 0;
  /// Deletes pod subnets (AttachmentRules::podSubnets) in one transaction: the agent's
  /// reconciler, for those no lease needs. install() adds them; nothing else deletes them.
  virtual Result<void> removePodSubnets(const std::vector<IpPrefix>& subnets) = 0;
};

/// Everything scanElements() passes, kept.
inline Result<TableState> readElements(Ruleset& ruleset) {
  TableStateCollector collector;
  HOSTPORT_TRY_VOID(ruleset.scanElements(collector));
  return collector.take();
}

}  // namespace hostport::nft
