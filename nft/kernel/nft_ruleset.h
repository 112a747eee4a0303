#pragma once

#include <functional>
#include <memory>
#include <optional>

#include "nft/kernel/element_table.h"
#include "nft/kernel/nft_context.h"
#include "nft/ruleset.h"
#include "nft/table_state.h"

namespace hostport::nft::kernel {

/// Ruleset over the kernel, in the network namespace of the calling thread. Elements and the
/// layout go over netlink (element_table.h); rules with conditions through the nft command
/// (nft_context.h), looked for only when one is needed.
class NftRuleset : public Ruleset {
 public:
  static Result<std::unique_ptr<NftRuleset>> create();

  Result<void> ensureTables() override;
  Result<void> install(const AttachmentRules& rules) override;
  Result<void> installMany(const std::vector<const AttachmentRules*>& attachments) override;
  Result<AttachmentRules> remove(const std::string& owner) override;
  Result<void> removeExact(const AttachmentRules& rules) override;
  Result<AttachmentRules> removeIfOwned(const AttachmentRules& planned) override;
  Result<void> scanElements(TableScan& scan) override;
  Result<std::optional<uint32_t>> generation() override;
  Result<AttachmentRules> listOwned(const std::string& owner) override;
  Result<void> removePodSubnets(const std::vector<IpPrefix>& subnets) override;

  /// Everything in both tables, every owner, conditional rules included. A missing table reads
  /// as empty.
  Result<TableState> readState();

 private:
  explicit NftRuleset(ElementTable elements) : elements_(std::move(elements)) {}
  Result<NftContext*> context();
  /// install() without its conflict report: the kernel's error as it came.
  Result<void> installOnce(const AttachmentRules& rules);
  Result<void> installConditional(const AttachmentRules& rules);
  /// What `owner` holds: from the sets alone unless it has conditional rules.
  Result<TableState> ownedState(const std::string& owner);
  /// Deletes what `find` says `owner` holds, in one transaction, and returns it; finds again
  /// when something found is gone by the time of the delete (kRemoveAttempts in all). remove()
  /// finds by listing, removeIfOwned() by looking its keys up.
  Result<AttachmentRules> removeFound(const std::string& owner,
                                      const std::function<Result<TableState>()>& find);
  Error describeConflict(Error error, const AttachmentRules& rules);

  ElementTable elements_;
  std::optional<NftContext> context_;
};

}  // namespace hostport::nft::kernel
