#include "nft/layout_messages.h"

#include <linux/netfilter/nf_conntrack_common.h>
#include <linux/rtnetlink.h>

#include <array>
#include <cstring>
#include <optional>
#include <span>
#include <string_view>

#include "nft/element_messages.h"
#include "nft/nfnetlink.h"
#include "nft/table_layout.h"

namespace hostport::nft {
namespace {

using netlink::NetlinkWriter;

// nft's datatype numbers (its `enum datatypes`), which the kernel keeps for nft alone: nft reads
// a set's key type back to print it. A concatenation's type is its members' numbers, six bits
// each, first member highest.
constexpr uint32_t kIpv4AddrType = 7;
constexpr uint32_t kIpv6AddrType = 8;
constexpr uint32_t kInetProtoType = 12;
constexpr uint32_t kInetServiceType = 13;
constexpr unsigned kTypeBits = 6;

uint32_t concatType(std::initializer_list<uint32_t> members) {
  uint32_t type = 0;
  for (const uint32_t member : members) type = (type << kTypeBits) | member;
  return type;
}

// The set userdata nft writes (libnftnl's NFTNL_UDATA_SET_*: one byte type, one byte length,
// the value): how to print keys and data. The kernel ignores it.
constexpr uint8_t kUdataKeyByteOrder = 0;
constexpr uint8_t kUdataDataByteOrder = 1;
constexpr uint8_t kUdataKeyTypeof = 3;
constexpr uint8_t kUdataDataTypeof = 4;
constexpr uint8_t kUdataDataInterval = 6;
constexpr uint8_t kUdataTypeofExpression = 0;  // inside a *_TYPEOF nest
constexpr uint8_t kUdataTypeofData = 1;
constexpr uint32_t kByteOrderNone = 0;  // nft's BYTEORDER_INVALID: a concatenation has none
constexpr uint32_t kByteOrderBigEndian = 2;
constexpr uint32_t kConcatExpression = 13;  // nft's EXPR_CONCAT

void putUdata(ByteString& out, uint8_t type, std::span<const std::byte> value) {
  out.push_back(std::byte{type});
  out.push_back(std::byte(static_cast<uint8_t>(value.size())));
  out.insert(out.end(), value.begin(), value.end());
}

void putUdataU32(ByteString& out, uint8_t type, uint32_t value) {
  putUdata(out, type, std::as_bytes(std::span(&value, 1)));  // host order, as nft writes it
}

/// A `type a . b` key or data: a concatenation with nothing more to say about its members.
void putConcatTypeof(ByteString& out, uint8_t type) {
  ByteString nest;
  putUdataU32(nest, kUdataTypeofExpression, kConcatExpression);
  putUdata(nest, kUdataTypeofData, {});
  putUdata(out, type, nest);
}

ByteString u32Bytes(uint32_t hostOrder) {
  ByteString bytes(sizeof hostOrder);
  std::memcpy(bytes.data(), &hostOrder, sizeof hostOrder);
  return bytes;
}

/// Where a family's addresses sit in its network header.
struct AddressShape {
  uint32_t datatype;
  uint32_t length;
  uint32_t sourceOffset;
  uint32_t destinationOffset;
  uint32_t registers() const { return length / 4; }  // 32-bit registers an address fills
};

AddressShape addressShape(Family family) {
  if (family == Family::kIPv4) return {kIpv4AddrType, 4, 12, 16};
  return {kIpv6AddrType, 16, 8, 24};
}

/// nf_tables numbers registers two ways; this names the 32-bit register `index` as the kernel
/// dumps it (and nft writes it): by its 16-byte register where it starts one.
uint32_t reg32(uint32_t index) {
  return index % 4 == 0 ? NFT_REG_1 + index / 4 : NFT_REG32_00 + index;
}

struct SetDefinition {
  std::string_view name;
  uint32_t flags = 0;
  uint32_t keyType = 0;
  uint32_t keyLength = 0;
  std::optional<std::pair<uint32_t, uint32_t>> data;  // type, length: a map
  std::vector<uint32_t> concatFieldLengths;           // an interval concatenation only
  ByteString userdata;
};

std::vector<SetDefinition> setsOf(Family family) {
  const AddressShape address = addressShape(family);
  const uint32_t proto = 4, port = 4;  // each member of a concatenation takes whole registers
  const auto mapUserdata = [] {
    ByteString userdata;
    putUdataU32(userdata, kUdataKeyByteOrder, kByteOrderNone);
    putUdataU32(userdata, kUdataDataByteOrder, kByteOrderNone);
    putConcatTypeof(userdata, kUdataKeyTypeof);
    putConcatTypeof(userdata, kUdataDataTypeof);
    putUdataU32(userdata, kUdataDataInterval, 0);
    return userdata;
  };
  ByteString addressUserdata;
  putUdataU32(addressUserdata, kUdataKeyByteOrder, kByteOrderBigEndian);
  ByteString subnetUserdata;
  putUdataU32(subnetUserdata, kUdataKeyByteOrder, kByteOrderNone);
  putConcatTypeof(subnetUserdata, kUdataKeyTypeof);

  const std::pair mapData{concatType({address.datatype, kInetServiceType}), address.length + port};
  return {
      {kPortsMap,
       NFT_SET_MAP,
       concatType({kInetProtoType, kInetServiceType}),
       proto + port,
       mapData,
       {},
       mapUserdata()},
      {kHostIpPortsMap,
       NFT_SET_MAP,
       concatType({address.datatype, kInetProtoType, kInetServiceType}),
       address.length + proto + port,
       mapData,
       {},
       mapUserdata()},
      {kSnatPodsSet, 0, address.datatype, address.length, std::nullopt, {}, addressUserdata},
      {kMasqAllSet, 0, address.datatype, address.length, std::nullopt, {}, addressUserdata},
      {kPodSubnetsSet,
       NFT_SET_INTERVAL | NFT_SET_CONCAT,
       concatType({address.datatype, address.datatype}),
       2 * address.length,
       std::nullopt,
       {address.length, address.length},
       subnetUserdata},
  };
}

/// Numbers the sets created in one batch: a rule refers to a set of the same batch by this id as
/// well as by name, as nft does.
using SetIds = std::vector<std::pair<std::string_view, uint32_t>>;

uint32_t idOf(const SetIds& ids, std::string_view name) {
  for (const auto& [set, id] : ids) {
    if (set == name) return id;
  }
  return 0;
}

void appendSet(NetlinkWriter& writer, Family family, const SetDefinition& set, uint32_t id) {
  beginRequest(writer, nftablesType(NFT_MSG_NEWSET), NLM_F_CREATE | NLM_F_ACK,
               netfilterFamily(family));
  writer.stringAttribute(NFTA_SET_TABLE, kTableName);
  writer.stringAttribute(NFTA_SET_NAME, set.name);
  writer.be32Attribute(NFTA_SET_FLAGS, set.flags);
  writer.be32Attribute(NFTA_SET_KEY_TYPE, set.keyType);
  writer.be32Attribute(NFTA_SET_KEY_LEN, set.keyLength);
  if (set.data) {
    writer.be32Attribute(NFTA_SET_DATA_TYPE, set.data->first);
    writer.be32Attribute(NFTA_SET_DATA_LEN, set.data->second);
  }
  writer.be32Attribute(NFTA_SET_ID, id);
  if (!set.concatFieldLengths.empty()) {
    const size_t desc = writer.beginNest(NFTA_SET_DESC);
    const size_t concat = writer.beginNest(NFTA_SET_DESC_CONCAT);
    for (const uint32_t length : set.concatFieldLengths) {
      const size_t field = writer.beginNest(NFTA_LIST_ELEM);
      writer.be32Attribute(NFTA_SET_FIELD_LEN, length);
      writer.endNest(field);
    }
    writer.endNest(concat);
    writer.endNest(desc);
  }
  writer.attribute(NFTA_SET_USERDATA, set.userdata);
  writer.endMessage();
}

struct Hook {
  uint32_t number;
  int32_t priority;
};

void appendChain(NetlinkWriter& writer, Family family, std::string_view name,
                 std::optional<Hook> hook) {
  beginRequest(writer, nftablesType(NFT_MSG_NEWCHAIN), NLM_F_CREATE | NLM_F_ACK,
               netfilterFamily(family));
  writer.stringAttribute(NFTA_CHAIN_TABLE, kTableName);
  writer.stringAttribute(NFTA_CHAIN_NAME, name);
  if (hook) {
    writer.stringAttribute(NFTA_CHAIN_TYPE, "nat");
    writer.be32Attribute(NFTA_CHAIN_POLICY, NF_ACCEPT);
    const size_t nest = writer.beginNest(NFTA_CHAIN_HOOK);
    writer.be32Attribute(NFTA_HOOK_HOOKNUM, hook->number);
    writer.be32Attribute(NFTA_HOOK_PRIORITY, static_cast<uint32_t>(hook->priority));
    writer.endNest(nest);
  }
  writer.endMessage();
}

void appendFlush(NetlinkWriter& writer, Family family, std::string_view chain) {
  beginRequest(writer, nftablesType(NFT_MSG_DELRULE), NLM_F_ACK, netfilterFamily(family));
  writer.stringAttribute(NFTA_RULE_TABLE, kTableName);
  writer.stringAttribute(NFTA_RULE_CHAIN, chain);
  writer.endMessage();
}

/// One NEWRULE appended to `chain`, its expressions written in order by the calls between
/// construction and end().
class RuleWriter {
 public:
  RuleWriter(NetlinkWriter& writer, Family family, std::string_view chain, const SetIds& ids)
      : writer_(writer), family_(family), ids_(ids) {
    beginRequest(writer, nftablesType(NFT_MSG_NEWRULE), NLM_F_CREATE | NLM_F_APPEND | NLM_F_ACK,
                 netfilterFamily(family));
    writer.stringAttribute(NFTA_RULE_TABLE, kTableName);
    writer.stringAttribute(NFTA_RULE_CHAIN, chain);
    expressions_ = writer.beginNest(NFTA_RULE_EXPRESSIONS);
  }
  void end() {
    writer_.endNest(expressions_);
    writer_.endMessage();
  }

  RuleWriter& payload(uint32_t base, uint32_t offset, uint32_t length, uint32_t dreg) {
    const size_t data = begin("payload");
    writer_.be32Attribute(NFTA_PAYLOAD_DREG, dreg);
    writer_.be32Attribute(NFTA_PAYLOAD_BASE, base);
    writer_.be32Attribute(NFTA_PAYLOAD_OFFSET, offset);
    writer_.be32Attribute(NFTA_PAYLOAD_LEN, length);
    return finish(data);
  }
  RuleWriter& sourceAddress(uint32_t dreg) {
    const AddressShape address = addressShape(family_);
    return payload(NFT_PAYLOAD_NETWORK_HEADER, address.sourceOffset, address.length, dreg);
  }
  RuleWriter& destinationAddress(uint32_t dreg) {
    const AddressShape address = addressShape(family_);
    return payload(NFT_PAYLOAD_NETWORK_HEADER, address.destinationOffset, address.length, dreg);
  }
  RuleWriter& destinationPort(uint32_t dreg) {  // `th dport`: TCP and UDP alike
    return payload(NFT_PAYLOAD_TRANSPORT_HEADER, 2, 2, dreg);
  }
  RuleWriter& meta(uint32_t key, uint32_t dreg) {
    const size_t data = begin("meta");
    writer_.be32Attribute(NFTA_META_KEY, key);
    writer_.be32Attribute(NFTA_META_DREG, dreg);
    return finish(data);
  }
  RuleWriter& lookup(std::string_view set, uint32_t sreg, std::optional<uint32_t> dreg = {}) {
    const size_t data = begin("lookup");
    writer_.be32Attribute(NFTA_LOOKUP_SREG, sreg);
    if (dreg) writer_.be32Attribute(NFTA_LOOKUP_DREG, *dreg);
    writer_.stringAttribute(NFTA_LOOKUP_SET, set);
    writer_.be32Attribute(NFTA_LOOKUP_SET_ID, idOf(ids_, set));
    return finish(data);
  }
  RuleWriter& destinationNat(uint32_t addressReg, uint32_t portReg) {
    const size_t data = begin("nat");
    writer_.be32Attribute(NFTA_NAT_TYPE, NFT_NAT_DNAT);
    writer_.be32Attribute(NFTA_NAT_FAMILY, netfilterFamily(family_));
    writer_.be32Attribute(NFTA_NAT_REG_ADDR_MIN, addressReg);
    writer_.be32Attribute(NFTA_NAT_REG_PROTO_MIN, portReg);
    return finish(data);
  }
  RuleWriter& masquerade() { return finish(begin("masq")); }
  RuleWriter& destinationAddressType(uint32_t dreg) {  // `fib daddr type`
    const size_t data = begin("fib");
    writer_.be32Attribute(NFTA_FIB_FLAGS, NFTA_FIB_F_DADDR);
    writer_.be32Attribute(NFTA_FIB_RESULT, NFT_FIB_RESULT_ADDRTYPE);
    writer_.be32Attribute(NFTA_FIB_DREG, dreg);
    return finish(data);
  }
  RuleWriter& conntrack(uint32_t key, uint32_t dreg) {
    const size_t data = begin("ct");
    writer_.be32Attribute(NFTA_CT_KEY, key);
    writer_.be32Attribute(NFTA_CT_DREG, dreg);
    return finish(data);
  }
  RuleWriter& compare(uint32_t op, uint32_t sreg, const ByteString& value) {
    const size_t data = begin("cmp");
    writer_.be32Attribute(NFTA_CMP_SREG, sreg);
    writer_.be32Attribute(NFTA_CMP_OP, op);
    dataNest(NFTA_CMP_DATA, value);
    return finish(data);
  }
  /// reg = (reg & mask) ^ 0 over 32 bits.
  RuleWriter& mask(uint32_t reg, uint32_t hostOrderMask) {
    const size_t data = begin("bitwise");
    writer_.be32Attribute(NFTA_BITWISE_SREG, reg);
    writer_.be32Attribute(NFTA_BITWISE_DREG, reg);
    writer_.be32Attribute(NFTA_BITWISE_LEN, 4);
    dataNest(NFTA_BITWISE_MASK, u32Bytes(hostOrderMask));
    dataNest(NFTA_BITWISE_XOR, u32Bytes(0));
    return finish(data);
  }
  RuleWriter& jump(std::string_view chain) {
    const size_t data = begin("immediate");
    writer_.be32Attribute(NFTA_IMMEDIATE_DREG, NFT_REG_VERDICT);
    const size_t value = writer_.beginNest(NFTA_IMMEDIATE_DATA);
    const size_t verdict = writer_.beginNest(NFTA_DATA_VERDICT);
    writer_.be32Attribute(NFTA_VERDICT_CODE, static_cast<uint32_t>(NFT_JUMP));
    writer_.stringAttribute(NFTA_VERDICT_CHAIN, chain);
    writer_.endNest(verdict);
    writer_.endNest(value);
    return finish(data);
  }

 private:
  /// Opens one expression and its data nest; finish() closes both.
  size_t begin(std::string_view name) {
    element_ = writer_.beginNest(NFTA_LIST_ELEM);
    writer_.stringAttribute(NFTA_EXPR_NAME, name);
    return writer_.beginNest(NFTA_EXPR_DATA);
  }
  RuleWriter& finish(size_t data) {
    writer_.endNest(data);
    writer_.endNest(element_);
    return *this;
  }
  void dataNest(uint16_t type, const ByteString& value) {
    const size_t nest = writer_.beginNest(type);
    writer_.attribute(NFTA_DATA_VALUE, value);
    writer_.endNest(nest);
  }

  NetlinkWriter& writer_;
  Family family_;
  const SetIds& ids_;
  size_t expressions_ = 0;
  size_t element_ = 0;
};

/// `ct status dnat`: the packet was destination-NATed, by us or anyone (reg 1 is left zero or
/// not).
RuleWriter& afterDestinationNat(RuleWriter& rule) {
  return rule.conntrack(NFT_CT_STATUS, reg32(0))
      .mask(reg32(0), IPS_DST_NAT)
      .compare(NFT_CMP_NEQ, reg32(0), u32Bytes(0));
}

/// The rules of the fixed chains, the bytecode of table_layout.h's text.
void appendFixedRules(NetlinkWriter& writer, Family family, const SetIds& ids) {
  const uint32_t addressRegs = addressShape(family).registers();
  const auto rule = [&](std::string_view chain) { return RuleWriter(writer, family, chain, ids); };

  rule("hostports").jump(kConditionalChain).end();
  // dnat to daddr . meta l4proto . th dport map @ipports: the key in consecutive registers.
  rule("hostports")
      .destinationAddress(reg32(0))
      .meta(NFT_META_L4PROTO, reg32(addressRegs))
      .destinationPort(reg32(addressRegs + 1))
      .lookup(kHostIpPortsMap, reg32(0), reg32(0))
      .destinationNat(reg32(0), reg32(addressRegs))
      .end();
  rule("hostports")
      .meta(NFT_META_L4PROTO, reg32(0))
      .destinationPort(reg32(1))
      .lookup(kPortsMap, reg32(0), reg32(0))
      .destinationNat(reg32(0), reg32(addressRegs))
      .end();
  for (const std::string_view hook : {"prerouting", "output"}) {
    rule(hook)
        .destinationAddressType(reg32(0))
        .compare(NFT_CMP_EQ, reg32(0), u32Bytes(RTN_LOCAL))
        .jump("hostports")
        .end();
  }
  auto masqueradeAll = rule("postrouting");
  afterDestinationNat(masqueradeAll)
      .destinationAddress(reg32(0))
      .lookup(kMasqAllSet, reg32(0))
      .masquerade()
      .end();
  auto samePodSubnet = rule("postrouting");
  afterDestinationNat(samePodSubnet)
      .destinationAddress(reg32(0))
      .lookup(kSnatPodsSet, reg32(0))
      .sourceAddress(reg32(0))
      .destinationAddress(reg32(addressRegs))
      .lookup(kPodSubnetsSet, reg32(0))
      .masquerade()
      .end();
  if (family == Family::kIPv4) {
    // ip saddr 127.0.0.0/8: nft compares the first byte alone.
    auto fromLocalhost = rule("postrouting");
    afterDestinationNat(fromLocalhost)
        .destinationAddress(reg32(0))
        .lookup(kSnatPodsSet, reg32(0))
        .payload(NFT_PAYLOAD_NETWORK_HEADER, addressShape(family).sourceOffset, 1, reg32(0))
        .compare(NFT_CMP_EQ, reg32(0), ByteString{std::byte{127}})
        .masquerade()
        .end();
  }
}

}  // namespace

void appendLayout(NetlinkWriter& writer, Family family) {
  beginRequest(writer, nftablesType(NFT_MSG_NEWTABLE), NLM_F_CREATE | NLM_F_ACK,
               netfilterFamily(family));
  writer.stringAttribute(NFTA_TABLE_NAME, kTableName);
  writer.be32Attribute(NFTA_TABLE_FLAGS, 0);
  writer.endMessage();

  SetIds ids;
  uint32_t nextId = 1;
  for (const auto& set : setsOf(family)) {
    ids.emplace_back(set.name, nextId);
    appendSet(writer, family, set, nextId++);
  }
  appendChain(writer, family, kConditionalChain, std::nullopt);
  appendChain(writer, family, "hostports", std::nullopt);
  // nft's dstnat and srcnat priorities; the output hook takes dstnat's number too.
  appendChain(writer, family, "prerouting", Hook{NF_INET_PRE_ROUTING, -100});
  appendChain(writer, family, "output", Hook{NF_INET_LOCAL_OUT, -100});
  appendChain(writer, family, "postrouting", Hook{NF_INET_POST_ROUTING, 100});
  for (const std::string_view chain : kFixedChains) appendFlush(writer, family, chain);
  appendFixedRules(writer, family, ids);
}

ByteString layoutBatch(const std::vector<SetElement>& elements) {
  NetlinkWriter writer;
  batchMarker(writer, NFNL_MSG_BATCH_BEGIN);
  appendLayout(writer, Family::kIPv4);
  appendLayout(writer, Family::kIPv6);
  appendElementChange(writer, ElementChange::kAdd, elements);
  batchMarker(writer, NFNL_MSG_BATCH_END);
  return writer.take();
}

}  // namespace hostport::nft
