#pragma once
// The fuzz targets' one check that only validated values reach the nft text and netlink
// builders: whatever a parser accepted is planned the way the agent plans it, and every builder's
// output is read back.

#include "lease/lease.h"
#include "nft/forward.h"

namespace hostport::fuzz {

/// Checks the rules one attachment would install: the owner and the conditions pass their
/// grammars again unchanged, the nft text has exactly one `add` line per forward, masquerade and
/// subnet (nothing a value held could start another line), a conditional rule is the conditions
/// followed by our own part (which a listing reads back from the rule's end), and every forward's
/// and masquerade's element bytes decode to the same value and owner.
void checkRules(const nft::AttachmentRules& rules);

/// The lease the agent would grant `request` if every port it asks for were free at its own
/// number: each dynamic request's host ports are its container ports.
Lease leaseAtOwnNumbers(const AllocationRequest& request);

/// Plans `lease` as the agent does (forwards/) and, when that succeeds, checks its rules;
/// leases of more than 256 ports are skipped (see plan_check.cc).
/// The lease must hold what a parser accepted: planning may refuse it (no forwarding record, two
/// grants on one host key), but never crash or let an unchecked value through.
void checkLeasePlan(const Lease& lease);

}  // namespace hostport::fuzz
