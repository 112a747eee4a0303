// One ctnetlink message as the agent's UDP conntrack flush reads it from a dump
// (hostnet/conntrack_message.h). Invariants: both addresses of a parsed entry are of the
// message's family; and the delete request built from the entry parses back to the same entry,
// so the flush deletes exactly the flow it read, never a neighbour.

#include <span>

#include "hostnet/conntrack_message.h"
#include "tests/fuzz/fuzz_check.h"

namespace hostnet = hostport::hostnet;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::span<const std::byte> message(reinterpret_cast<const std::byte*>(data), size);
  const auto entry = hostnet::parseConntrackMessage(message);
  if (!entry) return 0;
  FUZZ_CHECK(entry->origSrc.family() == entry->origDst.family());
  (void)entry->describe();
  const auto request = hostnet::buildConntrackDelete(*entry);
  if (!request) return 0;
  const auto again = hostnet::parseConntrackMessage(*request);
  FUZZ_CHECK(again.has_value());
  FUZZ_CHECK(again->l4proto == entry->l4proto && again->origSrc == entry->origSrc &&
             again->origDst == entry->origDst && again->origSrcPort == entry->origSrcPort &&
             again->origDstPort == entry->origDstPort && again->zone == entry->zone &&
             again->id == entry->id && again->rawOrigTuple == entry->rawOrigTuple);
  return 0;
}
