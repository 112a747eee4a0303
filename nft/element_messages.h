#pragma once
// nf_tables netlink messages for the element fast path, built and parsed as bytes. Pure: the
// socket is element_table.h's business, so all of this is unit-tested without root.
//
// Why not libnftables here: it parses text, fetches a cache of the whole ruleset and, for any
// `get element` or listing, every element of every set: O(N) per CNI call. These messages touch
// only the elements named (ADD) or read one set (DEL, CHECK).

#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "common/error.h"
#include "netlink/writer.h"
#include "nft/set_element.h"

namespace hostport::nft {

/// kDelete refuses the whole transaction when one element is missing (ENOENT), and the kernel's
/// abort of a refused transaction waits for an RCU grace period holding the nf_tables commit
/// mutex: 8-16 ms here, during which no commit on the node proceeds. kDestroy deletes those
/// present and skips the missing (NFT_MSG_DESTROYSETELEM, Linux 6.3), so a removal never aborts.
enum class ElementChange { kAdd, kDelete, kDestroy };

/// BEGIN, one NEWSETELEM/DELSETELEM/DESTROYSETELEM per (family, set) holding its elements, END: a
/// single nf_tables transaction. Each change message asks for an ACK. Sequence numbers are left to
/// the socket. Adding an element whose key exists with other data fails with EEXIST; with the same
/// data it succeeds (nft's `add element`).
ByteString elementBatch(ElementChange change, const std::vector<SetElement>& elements);
/// The change messages of elementBatch() alone, for a batch that holds more (layout_messages.h).
void appendElementChange(netlink::NetlinkWriter& writer, ElementChange change,
                         const std::vector<SetElement>& elements);

/// A dump request for every element of `set` in our table of `family`.
ByteString elementDumpRequest(Family family, std::string_view set);
/// A request for the element of `element.set` (in `element.family`) whose key is `element.key`:
/// NFT_MSG_GETSETELEM without NLM_F_DUMP, so the kernel looks the key up in its hash and answers
/// with that element alone (a NEWSETELEM message, parseElementReply), or with ENOENT. It asks for
/// an ACK, which ends the answer.
ByteString elementGetRequest(const SetElement& element);
/// A dump request for the rules of `chain` in our table of `family`.
ByteString ruleDumpRequest(Family family, std::string_view chain);

/// Calls `each` with every element one NEWSETELEM dump reply holds, as views into `message`.
/// kKernel for malformed bytes (after `each` has seen the elements before them).
Result<void> forEachElement(std::span<const std::byte> message,
                            const std::function<void(const SetElementView&)>& each);
/// Appends the elements one NEWSETELEM dump reply holds; with `owner`, only those whose comment
/// is `owner` (the others are skipped before they cost an allocation). kKernel for malformed
/// bytes.
Result<void> parseElementReply(std::span<const std::byte> message, std::vector<SetElement>& out,
                               const std::string* owner = nullptr);

/// A request for the netns's nf_tables ruleset generation (NFT_MSG_GETGEN): every committed
/// transaction, anyone's, in any table, moves it on.
ByteString generationRequest();

/// True when a kernel of `release` (uname -r: "6.18.44-...") knows NFT_MSG_DESTROYSETELEM (6.3
/// and later). A kernel that does not refuses the message, and the refusal is itself an abort.
bool releaseHasDestroy(std::string_view release);
/// The generation (NFTA_GEN_ID) in a NEWGEN reply.
Result<uint32_t> parseGenerationReply(std::span<const std::byte> message);

struct RuleSummary {
  uint64_t handle = 0;
  std::string comment;
  ByteString expressions;  // NFTA_RULE_EXPRESSIONS as the kernel sent them
};
/// The rule in one NEWRULE dump reply.
Result<RuleSummary> parseRuleReply(std::span<const std::byte> message);

}  // namespace hostport::nft
