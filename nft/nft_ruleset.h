#pragma once

#include <memory>

#include "nft/nft_context.h"
#include "nft/ruleset.h"
#include "nft/table_state.h"

namespace hostport::nft {

/// Ruleset over libnftables, in the network namespace of the calling thread.
class NftRuleset : public Ruleset {
 public:
  static Result<std::unique_ptr<NftRuleset>> create();

  Result<void> ensureTables() override;
  Result<void> install(const AttachmentRules& rules) override;
  Result<AttachmentRules> remove(const std::string& owner) override;
  Result<AttachmentRules> listOwned(const std::string& owner) override;

  /// Everything in both tables, every owner. A missing table reads as empty.
  Result<TableState> readState();

 private:
  explicit NftRuleset(NftContext context) : context_(std::move(context)) {}
  Error describeConflict(Error error, const AttachmentRules& rules);

  NftContext context_;
};

}  // namespace hostport::nft
