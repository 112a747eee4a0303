#pragma once
// Our tables over raw nf_tables netlink on one socket, in the network namespace of the calling
// thread. ADD writes only its own elements, DEL and CHECK read only our maps and sets (and the
// conditional chain's comments), so a CNI call costs a few messages instead of a parser, a
// ruleset cache and a whole-table listing. The layout is written here too (layout_messages.h);
// only rules with conditions need the nft command (nft_context.h).

#include <string>
#include <vector>

#include "netlink/socket.h"
#include "nft/element_messages.h"
#include "nft/table_state.h"

namespace hostport::nft::kernel {

class ElementTable {
 public:
  static Result<ElementTable> open();
  /// The table over a socket the caller opened (NETLINK_NETFILTER, in the netns to act in).
  static ElementTable over(netlink::NetlinkSocket socket) {
    return ElementTable(std::move(socket));
  }

  /// All of `elements` in one transaction, or none. The error carries the kernel's errno as its
  /// cause, so isNotFound() (a table or set is missing) and isAlreadyExists() (a key is held
  /// with other data) apply to it. kDelete goes as kDestroy where the kernel knows it (6.3 and
  /// later): missing elements are then no error, and no transaction aborts for them.
  Result<void> change(ElementChange change, const std::vector<SetElement>& elements);

  /// Lays out both families' tables (layout_messages.h) and adds `elements`, in one transaction.
  Result<void> layOut(const std::vector<SetElement>& elements = {});

  /// The forwards and masquerades in both families' maps and sets; with `owner`, only that
  /// owner's. The pod subnets, all of them. A missing table or set reads as empty; elements we
  /// cannot decode are not ours and are left out.
  Result<TableState> read(const std::string* owner = nullptr);
  /// read() without keeping anything: each element goes to `scan` as its reply is read.
  Result<void> scan(TableScan& scan, const std::string* owner = nullptr);

  /// Those of `elements` the kernel holds, as it holds them (data and comment), each looked up by
  /// its key (elementGetRequest): a few messages per element at any set size, where read() walks
  /// whole sets. Keys the kernel does not hold, or whose set or table is missing, are left out.
  /// Hash sets and maps only: a key in an interval set would match any range holding it.
  Result<std::vector<SetElement>> lookUp(const std::vector<SetElement>& elements);

  /// The netns's nf_tables generation (element_messages.h, generationRequest).
  Result<uint32_t> generation();

  /// Every rule of the conditional chain in both families, as its owner tag (comment) and
  /// handle, each an unidentified rule (kUnidentifiedRuleMarker): what the rule is, only an nft
  /// listing says. Enough to find an owner that holds rules, without the nft command.
  Result<std::vector<InstalledForward>> conditionalRules();
  /// True when a rule of the conditional chain, in either family, is commented `owner`.
  Result<bool> hasConditionalRules(const std::string& owner);

 private:
  explicit ElementTable(netlink::NetlinkSocket socket) : socket_(std::move(socket)) {}
  /// Read from uname(2) once per process.
  static bool kernelHasDestroy();
  /// The socket, opened afresh when an earlier request left it poisoned (a dump interrupted by a
  /// concurrent commit, a reply that never came): the agent's table lives as long as the agent,
  /// and one such request must not fail every later one until a restart. The request that went
  /// wrong has reported its own error.
  Result<netlink::NetlinkSocket*> socket();
  netlink::NetlinkSocket socket_;
};

}  // namespace hostport::nft::kernel
