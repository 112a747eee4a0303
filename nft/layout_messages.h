#pragma once
// The fixed layout of our tables (table_layout.h) as nf_tables netlink messages. Pure, like
// element_messages.h: the socket is element_table.h's business.
//
// Why not libnftables: the CNI plugin is a static binary that must run on any node, with no
// userspace library there (docs/design.md, "A plugin that runs anywhere"); and a first ADD that
// lays the table out should not pay for loading and running a parser. The messages are the ones
// nft 1.0.6 sends for the layout's text (tests/netns compares the two, listing and bytecode), so a
// table laid out by an older hostport, through nft, is the same table.

#include <vector>

#include "netlink/writer.h"
#include "nft/set_element.h"

namespace hostport::nft {

/// The messages that create the table of `family` and bring it back to the fixed layout: the
/// table, its maps, sets and chains are created where missing (one that exists with the same
/// definition is left as it is), the fixed chains are flushed and given their rules again. The
/// elements and the rules of the conditional chain survive. Every message asks for an ACK.
void appendLayout(netlink::NetlinkWriter& writer, Family family);

/// BEGIN, both families' layouts, then `elements` added, END: one transaction, so an ADD that
/// lays the table out leaves nothing behind when it fails.
ByteString layoutBatch(const std::vector<SetElement>& elements = {});

}  // namespace hostport::nft
