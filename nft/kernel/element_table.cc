#include "nft/kernel/element_table.h"

#include <linux/netlink.h>
#include <sys/utsname.h>

#include <algorithm>
#include <cerrno>
#include <iterator>

#include "nft/layout_messages.h"
#include "nft/table_layout.h"

namespace hostport::nft::kernel {
namespace {

constexpr Family kFamilies[] = {Family::kIPv4, Family::kIPv6};

}  // namespace

Result<ElementTable> ElementTable::open() {
  HOSTPORT_TRY(netlink::NetlinkSocket socket, netlink::NetlinkSocket::open(NETLINK_NETFILTER));
  return ElementTable(std::move(socket));
}

Result<netlink::NetlinkSocket*> ElementTable::socket() {
  if (socket_.poisoned()) {
    HOSTPORT_TRY(socket_, netlink::NetlinkSocket::open(NETLINK_NETFILTER));
  }
  return &socket_;
}

bool ElementTable::kernelHasDestroy() {
  static const bool known = [] {
    utsname name{};
    return uname(&name) == 0 && releaseHasDestroy(name.release);
  }();
  return known;
}

Result<void> ElementTable::change(ElementChange change, const std::vector<SetElement>& elements) {
  if (elements.empty()) return {};
  if (change == ElementChange::kDelete && kernelHasDestroy()) change = ElementChange::kDestroy;
  HOSTPORT_TRY(auto* socket, socket());
  ByteString batch = elementBatch(change, elements);
  return socket->requestBatch(
      batch, change == ElementChange::kAdd ? "adding set elements" : "deleting set elements");
}

Result<void> ElementTable::layOut(const std::vector<SetElement>& elements) {
  HOSTPORT_TRY(auto* socket, socket());
  ByteString batch = layoutBatch(elements);
  return socket->requestBatch(batch, "laying out the hostport tables");
}

Result<TableState> ElementTable::read(const std::string* owner) {
  TableStateCollector collector;
  HOSTPORT_TRY_VOID(scan(collector, owner));
  return collector.take();
}

Result<void> ElementTable::scan(TableScan& scan, const std::string* owner) {
  HOSTPORT_TRY(auto* socket, socket());
  for (const Family family : kFamilies) {
    for (const std::string_view set :
         {kPortsMap, kHostIpPortsMap, kSnatPodsSet, kMasqAllSet, kPodSubnetsSet}) {
      // The pod subnets are shared (no owner tag) and few: every reader gets them all.
      const std::string* ownerFilter = set == kPodSubnetsSet ? nullptr : owner;
      ByteString request = elementDumpRequest(family, set);
      HOSTPORT_TRY_VOID(socket->requestAccepting(
          request, "listing set " + std::string(set), {ENOENT},
          [&](std::span<const std::byte> message) {
            return forEachElement(message, [&](const SetElementView& element) {
              if (ownerFilter != nullptr && commentOf(element.userdata) != *ownerFilter) return;
              scanElement(element, scan);
            });
          }));
    }
  }
  return {};
}

Result<std::vector<SetElement>> ElementTable::lookUp(const std::vector<SetElement>& elements) {
  HOSTPORT_TRY(auto* socket, socket());
  std::vector<SetElement> held;
  for (const SetElement& wanted : elements) {
    ByteString request = elementGetRequest(wanted);
    HOSTPORT_TRY_VOID(socket->requestAccepting(
        request, "looking up an element of set " + wanted.set, {ENOENT},
        [&](std::span<const std::byte> message) { return parseElementReply(message, held); }));
  }
  return held;
}

Result<uint32_t> ElementTable::generation() {
  HOSTPORT_TRY(auto* socket, socket());
  ByteString request = generationRequest();
  std::optional<uint32_t> id;
  HOSTPORT_TRY_VOID(socket->request(request, "reading the ruleset generation",
                                    [&](std::span<const std::byte> message) -> Result<void> {
                                      HOSTPORT_TRY(id, parseGenerationReply(message));
                                      return {};
                                    }));
  if (!id) return fail(ErrorCode::kKernel, "the kernel sent no ruleset generation");
  return *id;
}

Result<std::vector<InstalledForward>> ElementTable::conditionalRules() {
  HOSTPORT_TRY(auto* socket, socket());
  std::vector<InstalledForward> rules;
  for (const Family family : kFamilies) {
    ByteString request = ruleDumpRequest(family, kConditionalChain);
    HOSTPORT_TRY_VOID(socket->requestAccepting(
        request, "listing the conditional chain", {ENOENT},
        [&](std::span<const std::byte> message) -> Result<void> {
          HOSTPORT_TRY(RuleSummary rule, parseRuleReply(message));
          rules.push_back({std::move(rule.comment), unidentifiedRule(family), rule.handle});
          return {};
        }));
  }
  return rules;
}

Result<bool> ElementTable::hasConditionalRules(const std::string& owner) {
  HOSTPORT_TRY(const auto rules, conditionalRules());
  return std::ranges::any_of(rules,
                             [&](const InstalledForward& rule) { return rule.owner == owner; });
}

}  // namespace hostport::nft::kernel
