#pragma once
// Builds the nft text commands for one attachment. Every interpolated value is typed and
// validated (addresses canonical, ports numeric, owner and conditions checked by forward.h), so
// nothing here needs escaping. Text rather than JSON because conditions are nft syntax and one
// `nft -f` run is one transaction: an attachment's rules and elements must share it.

#include <string>

#include "nft/forward.h"
#include "nft/table_state.h"

namespace hostport::nft {

/// Adds every forward and masquerade of `rules`, each tagged with rules.owner, and its pod subnets
/// (untagged: shared).
std::string installCommands(const AttachmentRules& rules);

/// Deletes exactly what `owned` lists: map and set elements by key, conditional rules by handle.
/// Never the pod subnets, which other attachments share.
std::string removeCommands(const TableState& owned);

}  // namespace hostport::nft
