// nf_tables netlink messages as the element table, the reconciler and the table watch read them
// (nft/element_messages.h, nft/kernel/table_events.h): the first byte picks the parser, the rest
// is one message. Invariants: elements read from a dump reply are written back by the element
// batch builder into messages that read back as the same elements; an element that reads as our
// forward or masquerade encodes back to the same value and owner; no parser reads outside the
// message (ASan).

#include <linux/netlink.h>

#include <span>
#include <vector>

#include "netlink/attributes.h"
#include "nft/element_messages.h"
#include "nft/kernel/table_events.h"
#include "nft/set_element.h"
#include "tests/fuzz/fuzz_check.h"

namespace {

namespace nft = hostport::nft;
using Bytes = std::span<const std::byte>;

/// The change messages of an element batch read back as dump replies (they share the layout).
std::vector<nft::SetElement> readBack(const nft::ByteString& batch) {
  std::vector<nft::SetElement> elements;
  Bytes rest(batch);
  std::vector<Bytes> messages;
  while (const auto message = hostport::netlink::messageBytes(rest)) {
    messages.push_back(*message);
    rest = rest.subspan(std::min<std::size_t>(NLMSG_ALIGN(message->size()), rest.size()));
  }
  FUZZ_CHECK(rest.empty() && messages.size() >= 2);
  for (std::size_t i = 1; i + 1 < messages.size(); ++i) {  // BEGIN and END hold no elements
    FUZZ_CHECK(nft::parseElementReply(messages[i], elements).has_value());
  }
  return elements;
}

void checkElements(const std::vector<nft::SetElement>& elements) {
  for (const auto& element : elements) {
    if (const auto installed = nft::forwardOf(element)) {
      const auto again = nft::forwardOf(nft::elementOf(installed->forward, installed->owner));
      FUZZ_CHECK(again.has_value() && again->owner == installed->owner &&
                 again->forward == installed->forward);
    }
    if (const auto installed = nft::masqueradeOf(element)) {
      const auto again = nft::masqueradeOf(nft::elementOf(installed->masquerade, installed->owner));
      FUZZ_CHECK(again.has_value() && again->owner == installed->owner &&
                 again->masquerade == installed->masquerade);
    }
  }
  if (elements.empty()) return;
  FUZZ_CHECK(readBack(nft::elementBatch(nft::ElementChange::kAdd, elements)) == elements);
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size == 0) return 0;
  const Bytes message(reinterpret_cast<const std::byte*>(data + 1), size - 1);
  switch (data[0] % 4) {
    case 0: {
      std::vector<nft::SetElement> elements;
      if (nft::parseElementReply(message, elements)) checkElements(elements);
      break;
    }
    case 1:
      (void)nft::parseRuleReply(message);
      break;
    case 2:
      (void)nft::parseGenerationReply(message);
      break;
    default:
      (void)nft::kernel::parseTableNotification(message);
      break;
  }
  return 0;
}
