#include "hostnet/conntrack_message.h"

#include <linux/netfilter/nfnetlink.h>
#include <linux/netfilter/nfnetlink_conntrack.h>
#include <netinet/in.h>

#include <algorithm>
#include <cstring>

#include "common/protocol.h"
#include "netlink/attributes.h"
#include "netlink/writer.h"

namespace hostport::hostnet {

using netlink::Bytes;
using netlink::forEachAttribute;
using netlink::messageBytes;
using netlink::NetlinkWriter;
using netlink::readBe16;
using netlink::readBe32;
using netlink::readStruct;
namespace {

// CTA_FILTER flag bits. The kernel keeps them in net/netfilter/nf_internals.h, not in a uapi
// header, but they are ABI: libnetfilter_conntrack defines the same values for itself.
constexpr uint32_t kFilterProtoNum = 1u << 3;      // CTA_FILTER_F_CTA_PROTO_NUM
constexpr uint32_t kFilterProtoDstPort = 1u << 5;  // CTA_FILTER_F_CTA_PROTO_DST_PORT

// A kernel tuple nest is under 100 bytes; anything much larger is not one.
constexpr size_t kMaxRawTupleSize = 1024;

constexpr uint16_t ctnetlinkType(uint8_t message) {
  return static_cast<uint16_t>((NFNL_SUBSYS_CTNETLINK << 8) | message);
}

uint8_t addressFamily(Family family) { return family == Family::kIPv4 ? AF_INET : AF_INET6; }

/// Starts a ctnetlink message with its nfgenmsg header.
void beginCtnetlink(NetlinkWriter& writer, uint8_t message, uint16_t flags, Family family) {
  nfgenmsg generic{};
  generic.nfgen_family = addressFamily(family);
  generic.version = NFNETLINK_V0;
  generic.res_id = 0;
  writer.beginMessage(ctnetlinkType(message), flags, generic);
}

std::unexpected<Error> malformed(const std::string& why) {
  return fail(ErrorCode::kDecode, "malformed conntrack message: " + why);
}

/// The fields of a CTA_TUPLE_* payload, as they land in a ConntrackEntry.
struct Tuple {
  uint8_t l4proto = 0;
  IpAddress src;
  IpAddress dst;
  uint16_t srcPort = 0;
  uint16_t dstPort = 0;
};

Result<void> parseTupleIp(Bytes nest, Family family, Tuple& tuple) {
  bool haveSrc = false;
  bool haveDst = false;
  std::string problem;
  const bool ok = forEachAttribute(nest, [&](uint16_t type, Bytes payload) {
    const bool v4 = type == CTA_IP_V4_SRC || type == CTA_IP_V4_DST;
    const bool v6 = type == CTA_IP_V6_SRC || type == CTA_IP_V6_DST;
    if (!v4 && !v6) return true;  // newer kernels may add attributes
    if (v4 != (family == Family::kIPv4)) {
      problem = "address of the wrong family in the tuple";
      return false;
    }
    const auto address = IpAddress::fromBytes(
        family, {reinterpret_cast<const uint8_t*>(payload.data()), payload.size()});
    if (!address) {
      problem = "address attribute of " + std::to_string(payload.size()) + " bytes";
      return false;
    }
    const bool isSrc = type == CTA_IP_V4_SRC || type == CTA_IP_V6_SRC;
    (isSrc ? tuple.src : tuple.dst) = *address;
    (isSrc ? haveSrc : haveDst) = true;
    return true;
  });
  if (!ok) return malformed(problem.empty() ? "bad attribute in CTA_TUPLE_IP" : problem);
  if (!haveSrc || !haveDst) return malformed("CTA_TUPLE_IP lacks a source or destination");
  return {};
}

Result<void> parseTupleProto(Bytes nest, Tuple& tuple) {
  bool haveNum = false;
  std::string problem;
  const bool ok = forEachAttribute(nest, [&](uint16_t type, Bytes payload) {
    switch (type) {
      case CTA_PROTO_NUM:
        if (payload.size() != 1) {
          problem = "CTA_PROTO_NUM is not one byte";
          return false;
        }
        tuple.l4proto = std::to_integer<uint8_t>(payload[0]);
        haveNum = true;
        return true;
      case CTA_PROTO_SRC_PORT:
      case CTA_PROTO_DST_PORT: {
        const auto port = readBe16(payload);
        if (!port) {
          problem = "port attribute is not two bytes";
          return false;
        }
        (type == CTA_PROTO_SRC_PORT ? tuple.srcPort : tuple.dstPort) = *port;
        return true;
      }
      default:
        return true;  // ICMP type/code/id and future attributes
    }
  });
  if (!ok) return malformed(problem.empty() ? "bad attribute in CTA_TUPLE_PROTO" : problem);
  if (!haveNum) return malformed("CTA_TUPLE_PROTO lacks CTA_PROTO_NUM");
  return {};
}

/// Parses a CTA_TUPLE_ORIG payload; requires both the address and the protocol nest.
Result<Tuple> parseTuple(Bytes nest, Family family) {
  std::optional<Bytes> ip;
  std::optional<Bytes> proto;
  if (!forEachAttribute(nest, [&](uint16_t type, Bytes payload) {
        if (type == CTA_TUPLE_IP) ip = payload;
        if (type == CTA_TUPLE_PROTO) proto = payload;
        return true;
      })) {
    return malformed("bad attribute in CTA_TUPLE_ORIG");
  }
  if (!ip || !proto) return malformed("CTA_TUPLE_ORIG lacks CTA_TUPLE_IP or CTA_TUPLE_PROTO");
  Tuple tuple;
  HOSTPORT_TRY_VOID(parseTupleIp(*ip, family, tuple));
  HOSTPORT_TRY_VOID(parseTupleProto(*proto, tuple));
  return tuple;
}

}  // namespace

std::string ConntrackEntry::describe() const {
  return ipProtocolName(l4proto) + " " + describeEndpoint(origSrc, origSrcPort) + " -> " +
         describeEndpoint(origDst, origDstPort);
}

namespace {

/// A dump of one family, with the kernel asked to keep UDP entries only, and with `dstPort` only
/// those to it.
std::vector<std::byte> udpDump(Family family, std::optional<uint16_t> dstPort) {
  NetlinkWriter writer;
  beginCtnetlink(writer, IPCTNL_MSG_CT_GET, NLM_F_REQUEST | NLM_F_DUMP, family);
  // The kernel reads the values to compare from a partial CTA_TUPLE_ORIG and which of them to
  // compare from CTA_FILTER_ORIG_FLAGS (host-order u32). No address: any source, any target.
  const size_t tuple = writer.beginNest(CTA_TUPLE_ORIG);
  const size_t proto = writer.beginNest(CTA_TUPLE_PROTO);
  writer.u8Attribute(CTA_PROTO_NUM, IPPROTO_UDP);
  if (dstPort) writer.be16Attribute(CTA_PROTO_DST_PORT, *dstPort);
  writer.endNest(proto);
  writer.endNest(tuple);
  const size_t filter = writer.beginNest(CTA_FILTER);
  writer.hostU32Attribute(CTA_FILTER_ORIG_FLAGS,
                          kFilterProtoNum | (dstPort ? kFilterProtoDstPort : 0));
  writer.endNest(filter);
  writer.endMessage();
  return writer.take();
}

}  // namespace

std::vector<std::byte> buildConntrackDump(Family family, std::optional<uint16_t> udpDstPort) {
  if (udpDstPort) return udpDump(family, udpDstPort);
  NetlinkWriter writer;
  beginCtnetlink(writer, IPCTNL_MSG_CT_GET, NLM_F_REQUEST | NLM_F_DUMP, family);
  writer.endMessage();
  return writer.take();
}

std::vector<std::byte> buildUdpConntrackDump(Family family) {
  return udpDump(family, std::nullopt);
}

Result<ConntrackEntry> parseConntrackMessage(std::span<const std::byte> message) {
  const auto bytes = messageBytes(message);
  if (!bytes) return malformed("truncated netlink header or bad nlmsg_len");
  const auto header = readStruct<nlmsghdr>(*bytes);
  if (header->nlmsg_type != ctnetlinkType(IPCTNL_MSG_CT_NEW) &&
      header->nlmsg_type != ctnetlinkType(IPCTNL_MSG_CT_DELETE)) {
    return malformed("unexpected message type " + std::to_string(header->nlmsg_type));
  }
  const Bytes body = bytes->subspan(NLMSG_HDRLEN);
  const auto nfg = readStruct<nfgenmsg>(body);
  if (!nfg) return malformed("truncated nfgenmsg");
  Family family = Family::kIPv4;
  if (nfg->nfgen_family == AF_INET6) {
    family = Family::kIPv6;
  } else if (nfg->nfgen_family != AF_INET) {
    return malformed("unsupported family " + std::to_string(nfg->nfgen_family));
  }

  ConntrackEntry entry;
  std::optional<Bytes> origTuple;
  std::string problem;
  const Bytes attributes = body.subspan(std::min(body.size(), NLMSG_ALIGN(sizeof(nfgenmsg))));
  const bool ok = forEachAttribute(attributes, [&](uint16_t type, Bytes payload) {
    switch (type) {
      case CTA_TUPLE_ORIG:
        origTuple = payload;
        return true;
      case CTA_ZONE:
        entry.zone = readBe16(payload);
        if (!entry.zone) problem = "CTA_ZONE is not two bytes";
        return entry.zone.has_value();
      case CTA_ID:
        entry.id = readBe32(payload);
        if (!entry.id) problem = "CTA_ID is not four bytes";
        return entry.id.has_value();
      default:
        return true;  // status, timeout, counters, ...: not needed here
    }
  });
  if (!ok) return malformed(problem.empty() ? "bad attribute length" : problem);
  if (!origTuple) return malformed("no CTA_TUPLE_ORIG");
  if (origTuple->size() > kMaxRawTupleSize) return malformed("CTA_TUPLE_ORIG is too large");

  HOSTPORT_TRY(const Tuple tuple, parseTuple(*origTuple, family));
  entry.l4proto = tuple.l4proto;
  entry.origSrc = tuple.src;
  entry.origDst = tuple.dst;
  entry.origSrcPort = tuple.srcPort;
  entry.origDstPort = tuple.dstPort;
  entry.rawOrigTuple.assign(origTuple->begin(), origTuple->end());
  return entry;
}

bool isUdpToPort(const ConntrackEntry& entry, uint16_t port) {
  return entry.l4proto == IPPROTO_UDP && entry.origDstPort == port;
}

Result<std::vector<std::byte>> buildConntrackDelete(const ConntrackEntry& entry) {
  // Re-parse the raw tuple: a delete without a full tuple would flush the table, and a raw tuple
  // that disagrees with the fields would delete something other than what the caller matched.
  const Bytes raw(entry.rawOrigTuple);
  if (raw.empty() || raw.size() > kMaxRawTupleSize) {
    return fail(ErrorCode::kInvalidArgument, "conntrack entry has no usable original tuple");
  }
  auto tuple = parseTuple(raw, entry.family());
  if (!tuple) {
    return fail(ErrorCode::kInvalidArgument,
                "conntrack entry has an invalid original tuple: " + tuple.error().message);
  }
  if (tuple->l4proto != entry.l4proto || tuple->srcPort != entry.origSrcPort ||
      tuple->dstPort != entry.origDstPort || tuple->src != entry.origSrc ||
      tuple->dst != entry.origDst) {
    return fail(ErrorCode::kInvalidArgument,
                "conntrack entry fields do not match its raw tuple: " + entry.describe());
  }

  NetlinkWriter writer;
  beginCtnetlink(writer, IPCTNL_MSG_CT_DELETE, NLM_F_REQUEST | NLM_F_ACK, entry.family());
  writer.attribute(CTA_TUPLE_ORIG | NLA_F_NESTED, raw);
  if (entry.zone) writer.be16Attribute(CTA_ZONE, *entry.zone);
  if (entry.id) writer.be32Attribute(CTA_ID, *entry.id);
  writer.endMessage();
  return writer.take();
}

}  // namespace hostport::hostnet
