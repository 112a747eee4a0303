#pragma once
// The nfnetlink framing every nf_tables request shares: message types, the nfgenmsg header and
// the batch markers around a transaction. Pure; element_messages.cc and layout_messages.cc build
// on it.

#include <arpa/inet.h>
#include <linux/netfilter.h>
#include <linux/netfilter/nf_tables.h>
#include <linux/netfilter/nfnetlink.h>
#include <linux/netlink.h>
#include <sys/socket.h>

#include <cstdint>

#include "common/ip_address.h"
#include "netlink/writer.h"

namespace hostport::nft {

inline uint8_t netfilterFamily(Family family) {
  return family == Family::kIPv4 ? NFPROTO_IPV4 : NFPROTO_IPV6;
}

/// NFT_MSG_DESTROYSETELEM (Linux 6.3): Debian 12's headers (6.1) do not have it.
inline constexpr int kNftMsgDestroySetElem = 30;

inline uint16_t nftablesType(int message) {
  return static_cast<uint16_t>((NFNL_SUBSYS_NFTABLES << 8) | message);
}

/// Starts a request with its nfgenmsg header; NLM_F_REQUEST is added to `flags`.
inline void beginRequest(netlink::NetlinkWriter& writer, uint16_t type, uint16_t flags,
                         uint8_t family, uint16_t resId = 0) {
  nfgenmsg generic{};
  generic.nfgen_family = family;
  generic.version = NFNETLINK_V0;
  generic.res_id = htons(resId);
  writer.beginMessage(type, NLM_F_REQUEST | flags, generic);
}

/// NFNL_MSG_BATCH_BEGIN or NFNL_MSG_BATCH_END: everything between them is one transaction.
inline void batchMarker(netlink::NetlinkWriter& writer, uint16_t type) {
  beginRequest(writer, type, 0, AF_UNSPEC, NFNL_SUBSYS_NFTABLES);
  writer.endMessage();
}

}  // namespace hostport::nft
