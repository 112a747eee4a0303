#include "nft/element_messages.h"

#include <arpa/inet.h>
#include <linux/netfilter.h>
#include <linux/netfilter/nf_tables.h>
#include <linux/netfilter/nfnetlink.h>
#include <linux/netlink.h>
#include <sys/socket.h>

#include <charconv>
#include <map>
#include <utility>

#include "netlink/attributes.h"
#include "netlink/writer.h"
#include "nft/nfnetlink.h"
#include "nft/table_layout.h"

namespace hostport::nft {
namespace {

using netlink::Bytes;
using netlink::forEachAttribute;
using netlink::NetlinkWriter;
using netlink::readStruct;

// Bytes of elements per list attribute: well under the 16-bit attribute length, with room for
// the largest element (a comment of up to 255 bytes, IPv6 keys and data).
constexpr size_t kElementListBudget = 32 * 1024;

/// A nest holding one NFTA_DATA_VALUE: how nf_tables wraps keys and data.
void dataValue(NetlinkWriter& writer, uint16_t type, const ByteString& value) {
  const size_t nest = writer.beginNest(type);
  writer.attribute(NFTA_DATA_VALUE, value);
  writer.endNest(nest);
}

Result<void> malformed(std::string_view what) {
  return fail(ErrorCode::kKernel, "malformed nf_tables " + std::string(what) + " reply");
}

/// The payload of an nft_data nest: its NFTA_DATA_VALUE (verdicts are not ours), as a view.
Bytes valueIn(Bytes nest) {
  Bytes value;
  forEachAttribute(nest, [&](uint16_t type, Bytes payload) {
    if (type == NFTA_DATA_VALUE) value = payload;
    return true;
  });
  return value;
}

/// A NLA_STRING payload up to its NUL, as a view into the reply: no copy unless one is kept.
std::string_view stringIn(Bytes payload) {
  const std::string_view text(reinterpret_cast<const char*>(payload.data()), payload.size());
  return text.substr(0, text.find('\0'));
}

/// The nfgenmsg family and the attributes after it, for a message of `type`.
std::optional<std::pair<Family, Bytes>> nftablesBody(Bytes message, int type) {
  // messageBytes() also refuses an nlmsg_len below the header's own 16 bytes, past which the
  // body would start outside the message (found by tests/fuzz/nft_reply_fuzzer).
  const auto bytes = netlink::messageBytes(message);
  if (!bytes || readStruct<nlmsghdr>(*bytes)->nlmsg_type != nftablesType(type)) {
    return std::nullopt;
  }
  const Bytes body = bytes->subspan(NLMSG_HDRLEN);
  const auto generic = readStruct<nfgenmsg>(body);
  if (!generic) return std::nullopt;
  const Family family = generic->nfgen_family == NFPROTO_IPV6 ? Family::kIPv6 : Family::kIPv4;
  return std::pair{family, body.subspan(NLMSG_ALIGN(sizeof(nfgenmsg)))};
}

/// A dump of what one object of our table (a set's elements, a chain's rules) holds.
ByteString dumpRequest(int message, uint16_t tableAttribute, uint16_t objectAttribute,
                       Family family, std::string_view object) {
  NetlinkWriter writer;
  beginRequest(writer, nftablesType(message), NLM_F_DUMP, netfilterFamily(family));
  writer.stringAttribute(tableAttribute, kTableName);
  writer.stringAttribute(objectAttribute, object);
  writer.endMessage();
  return writer.take();
}

}  // namespace

void appendElementChange(NetlinkWriter& writer, ElementChange change,
                         const std::vector<SetElement>& elements) {
  // One message per (family, set): the kernel takes a list of elements per set.
  std::map<std::pair<Family, std::string>, std::vector<const SetElement*>> bySet;
  for (const auto& element : elements) bySet[{element.family, element.set}].push_back(&element);

  const bool add = change == ElementChange::kAdd;
  const int type =
      add ? NFT_MSG_NEWSETELEM
          : (change == ElementChange::kDestroy ? kNftMsgDestroySetElem : NFT_MSG_DELSETELEM);
  for (const auto& [where, members] : bySet) {
    // An attribute's length is 16 bits: a range request can hold more elements than one
    // list attribute can carry, so a set's elements may take several messages. They stay one
    // transaction: the batch is.
    for (size_t first = 0; first < members.size();) {
      beginRequest(writer, nftablesType(type), NLM_F_ACK | (add ? NLM_F_CREATE : 0),
                   netfilterFamily(where.first));
      writer.stringAttribute(NFTA_SET_ELEM_LIST_TABLE, kTableName);
      writer.stringAttribute(NFTA_SET_ELEM_LIST_SET, where.second);
      const size_t list = writer.beginNest(NFTA_SET_ELEM_LIST_ELEMENTS);
      for (; first < members.size() && writer.size() - list < kElementListBudget; ++first) {
        const SetElement& element = *members[first];
        const size_t item = writer.beginNest(NFTA_LIST_ELEM);
        dataValue(writer, NFTA_SET_ELEM_KEY, element.key);
        if (!element.keyEnd.empty()) dataValue(writer, NFTA_SET_ELEM_KEY_END, element.keyEnd);
        if (add && !element.data.empty()) dataValue(writer, NFTA_SET_ELEM_DATA, element.data);
        if (add && !element.userdata.empty()) {
          writer.attribute(NFTA_SET_ELEM_USERDATA, element.userdata);
        }
        writer.endNest(item);
      }
      writer.endNest(list);
      writer.endMessage();
    }
  }
}

ByteString elementBatch(ElementChange change, const std::vector<SetElement>& elements) {
  NetlinkWriter writer;
  batchMarker(writer, NFNL_MSG_BATCH_BEGIN);
  appendElementChange(writer, change, elements);
  batchMarker(writer, NFNL_MSG_BATCH_END);
  return writer.take();
}

ByteString elementDumpRequest(Family family, std::string_view set) {
  return dumpRequest(NFT_MSG_GETSETELEM, NFTA_SET_ELEM_LIST_TABLE, NFTA_SET_ELEM_LIST_SET, family,
                     set);
}

ByteString elementGetRequest(const SetElement& element) {
  NetlinkWriter writer;
  beginRequest(writer, nftablesType(NFT_MSG_GETSETELEM), NLM_F_ACK,
               netfilterFamily(element.family));
  writer.stringAttribute(NFTA_SET_ELEM_LIST_TABLE, kTableName);
  writer.stringAttribute(NFTA_SET_ELEM_LIST_SET, element.set);
  const size_t list = writer.beginNest(NFTA_SET_ELEM_LIST_ELEMENTS);
  const size_t item = writer.beginNest(NFTA_LIST_ELEM);
  dataValue(writer, NFTA_SET_ELEM_KEY, element.key);
  writer.endNest(item);
  writer.endNest(list);
  writer.endMessage();
  return writer.take();
}

ByteString ruleDumpRequest(Family family, std::string_view chain) {
  return dumpRequest(NFT_MSG_GETRULE, NFTA_RULE_TABLE, NFTA_RULE_CHAIN, family, chain);
}

ByteString generationRequest() {
  NetlinkWriter writer;
  beginRequest(writer, nftablesType(NFT_MSG_GETGEN), 0, AF_UNSPEC);
  writer.endMessage();
  return writer.take();
}

Result<uint32_t> parseGenerationReply(std::span<const std::byte> message) {
  const auto body = nftablesBody(message, NFT_MSG_NEWGEN);
  if (!body) return std::unexpected(malformed("generation").error());
  std::optional<uint32_t> id;
  if (!forEachAttribute(body->second,
                        [&](uint16_t type, Bytes payload) {
                          if (type == NFTA_GEN_ID) id = netlink::readBe32(payload);
                          return true;
                        }) ||
      !id) {
    return std::unexpected(malformed("generation").error());
  }
  return *id;
}

Result<void> forEachElement(std::span<const std::byte> message,
                            const std::function<void(const SetElementView&)>& each) {
  const auto body = nftablesBody(message, NFT_MSG_NEWSETELEM);
  if (!body) return malformed("set element");
  std::string_view set;
  std::optional<Bytes> list;
  if (!forEachAttribute(body->second, [&](uint16_t type, Bytes payload) {
        if (type == NFTA_SET_ELEM_LIST_SET) set = stringIn(payload);
        if (type == NFTA_SET_ELEM_LIST_ELEMENTS) list = payload;
        return true;
      })) {
    return malformed("set element");
  }
  if (!list) return {};
  const bool parsed = forEachAttribute(*list, [&](uint16_t type, Bytes item) {
    if (type != NFTA_LIST_ELEM) return true;
    SetElementView element;
    element.family = body->first;
    element.set = set;
    const bool ok = forEachAttribute(item, [&](uint16_t field, Bytes payload) {
      switch (field) {
        case NFTA_SET_ELEM_KEY:
          element.key = valueIn(payload);
          break;
        case NFTA_SET_ELEM_KEY_END:
          element.keyEnd = valueIn(payload);
          break;
        case NFTA_SET_ELEM_DATA:
          element.data = valueIn(payload);
          break;
        case NFTA_SET_ELEM_USERDATA:
          element.userdata = payload;
          break;
      }
      return true;
    });
    if (ok) each(element);
    return ok;
  });
  return parsed ? Result<void>{} : malformed("set element");
}

Result<void> parseElementReply(std::span<const std::byte> message, std::vector<SetElement>& out,
                               const std::string* owner) {
  return forEachElement(message, [&](const SetElementView& element) {
    if (owner != nullptr && commentOf(element.userdata) != *owner) return;
    out.push_back(SetElement{element.family, std::string(element.set),
                             ByteString(element.key.begin(), element.key.end()),
                             ByteString(element.keyEnd.begin(), element.keyEnd.end()),
                             ByteString(element.data.begin(), element.data.end()),
                             ByteString(element.userdata.begin(), element.userdata.end())});
  });
}

bool releaseHasDestroy(std::string_view release) {
  int major = 0, minor = 0;
  const char* end = release.data() + release.size();
  auto [afterMajor, majorError] = std::from_chars(release.data(), end, major);
  if (majorError != std::errc() || afterMajor == end || *afterMajor != '.') return false;
  auto [afterMinor, minorError] = std::from_chars(afterMajor + 1, end, minor);
  if (minorError != std::errc()) return false;
  return major > 6 || (major == 6 && minor >= 3);
}

Result<RuleSummary> parseRuleReply(std::span<const std::byte> message) {
  const auto body = nftablesBody(message, NFT_MSG_NEWRULE);
  if (!body) return std::unexpected(malformed("rule").error());
  RuleSummary rule;
  const bool parsed = forEachAttribute(body->second, [&](uint16_t type, Bytes payload) {
    if (type == NFTA_RULE_HANDLE && payload.size() == 8) {
      for (const std::byte b : payload)
        rule.handle = rule.handle << 8 | std::to_integer<uint8_t>(b);
    }
    if (type == NFTA_RULE_EXPRESSIONS) rule.expressions.assign(payload.begin(), payload.end());
    if (type == NFTA_RULE_USERDATA) rule.comment = commentOf(payload);
    return true;
  });
  if (!parsed) return std::unexpected(malformed("rule").error());
  return rule;
}

}  // namespace hostport::nft
