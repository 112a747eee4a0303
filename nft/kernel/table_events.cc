#include "nft/kernel/table_events.h"

#include <linux/netfilter.h>
#include <linux/netfilter/nf_tables.h>
#include <linux/netfilter/nfnetlink.h>
#include <linux/netlink.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>

#include "netlink/attributes.h"
#include "nft/table_layout.h"

namespace hostport::nft::kernel {
namespace {

using netlink::Bytes;

// The DESTROY forms (kernel 6.3+, nft 1.0.7+) are deletes that tolerate absence; the headers we
// build against predate them. Whichever type the kernel notifies their commits with, they read
// as deletes.
constexpr uint16_t kDestroyTable = 26;
constexpr uint16_t kDestroyChain = 27;
constexpr uint16_t kDestroyRule = 28;
constexpr uint16_t kDestroySet = 29;
constexpr uint16_t kDestroySetElement = 30;

// Up to this many datagrams already queued behind a reported change are read with it, so that a
// flush of a big map wakes the consumer once; a storm that never ends still returns.
constexpr int kMaxDrainedDatagrams = 1024;

/// A NLA_STRING payload up to its NUL.
std::string_view stringIn(Bytes payload) {
  const std::string_view text(reinterpret_cast<const char*>(payload.data()), payload.size());
  return text.substr(0, text.find('\0'));
}

/// The attribute that names the chain, set or map of a message, when it has one.
std::optional<uint16_t> objectAttribute(uint16_t message) {
  switch (message) {
    case NFT_MSG_NEWCHAIN:
    case NFT_MSG_DELCHAIN:
    case kDestroyChain:
      return NFTA_CHAIN_NAME;
    case NFT_MSG_NEWRULE:
    case NFT_MSG_DELRULE:
    case kDestroyRule:
      return NFTA_RULE_CHAIN;
    case NFT_MSG_NEWSET:
    case NFT_MSG_DELSET:
    case kDestroySet:
      return NFTA_SET_NAME;
    case NFT_MSG_NEWSETELEM:
    case NFT_MSG_DELSETELEM:
    case kDestroySetElement:
      return NFTA_SET_ELEM_LIST_SET;
    default:
      return std::nullopt;
  }
}

/// "add" or "delete" and what, for a reported message; nullptr for the others.
struct ChangeWords {
  const char* verb;
  const char* noun;
};
std::optional<ChangeWords> wordsFor(uint16_t message) {
  switch (message) {
    case NFT_MSG_DELTABLE:
    case kDestroyTable:
      return ChangeWords{"delete", "table"};
    case NFT_MSG_DELCHAIN:
    case kDestroyChain:
      return ChangeWords{"delete", "chain"};
    case NFT_MSG_DELRULE:
    case kDestroyRule:
      return ChangeWords{"delete", "rule"};
    case NFT_MSG_DELSET:
    case kDestroySet:
      return ChangeWords{"delete", "set"};
    case NFT_MSG_DELSETELEM:
    case kDestroySetElement:
      return ChangeWords{"delete", "element"};
    case NFT_MSG_NEWTABLE:
      return ChangeWords{"add", "table"};
    case NFT_MSG_NEWCHAIN:
      return ChangeWords{"add", "chain"};
    case NFT_MSG_NEWRULE:
      return ChangeWords{"add", "rule"};
    case NFT_MSG_NEWSET:
      return ChangeWords{"add", "set"};
    default:
      return std::nullopt;  // NEWSETELEM included: an added element removes no forward
  }
}

/// Appends describeTableChange() to `out`, so a buffer that is kept reuses its capacity.
void appendDescription(std::string& out, const TableNotification& notification) {
  const auto words = wordsFor(notification.message);
  out += words ? words->verb : "change";
  out += ' ';
  out += words ? words->noun : "object";
  out += notification.family == NFPROTO_IPV6 ? " ip6 " : " ip ";
  out += notification.table;
  if (!notification.object.empty()) {
    out += ' ';
    out += notification.object;
  }
}

}  // namespace

std::optional<TableNotification> parseTableNotification(std::span<const std::byte> message) {
  const auto bytes = netlink::messageBytes(message);
  if (!bytes) return std::nullopt;
  const auto header = netlink::readStruct<nlmsghdr>(*bytes);
  if (NFNL_SUBSYS_ID(header->nlmsg_type) != NFNL_SUBSYS_NFTABLES) return std::nullopt;
  const Bytes body = bytes->subspan(NLMSG_HDRLEN);
  const auto generic = netlink::readStruct<nfgenmsg>(body);
  if (!generic || body.size() < NLMSG_ALIGN(sizeof(nfgenmsg))) return std::nullopt;

  TableNotification notification;
  notification.message = NFNL_MSG_TYPE(header->nlmsg_type);
  notification.family = generic->nfgen_family;
  const auto object = objectAttribute(notification.message);
  const bool generation = notification.message == NFT_MSG_NEWGEN;
  const bool parsed = netlink::forEachAttribute(
      body.subspan(NLMSG_ALIGN(sizeof(nfgenmsg))), [&](uint16_t type, Bytes payload) {
        if (generation) {
          if (type == NFTA_GEN_PROC_PID) notification.pid = netlink::readBe32(payload).value_or(0);
          return true;
        }
        // Every nf_tables object message names its table in attribute 1 (NFTA_TABLE_NAME,
        // NFTA_CHAIN_TABLE, NFTA_RULE_TABLE, NFTA_SET_TABLE, NFTA_SET_ELEM_LIST_TABLE).
        if (type == NFTA_TABLE_NAME) notification.table = stringIn(payload);
        if (object && type == *object) notification.object = stringIn(payload);
        return true;
      });
  if (!parsed) return std::nullopt;
  return notification;
}

bool isOurTableChange(const TableNotification& notification) {
  return (notification.family == NFPROTO_IPV4 || notification.family == NFPROTO_IPV6) &&
         notification.table == kTableName && wordsFor(notification.message).has_value();
}

std::string describeTableChange(const TableNotification& notification) {
  std::string text;
  appendDescription(text, notification);
  return text;
}

bool isThreadOfThisProcess(uint32_t pid) {
  if (pid == 0) return false;
  if (pid == static_cast<uint32_t>(::getpid())) return true;
  char path[32];
  std::snprintf(path, sizeof(path), "/proc/self/task/%u", pid);
  return ::access(path, F_OK) == 0;
}

bool TableChangeBatches::feed(std::span<const std::byte> datagram) {
  bool foreign = false;
  while (const auto message = netlink::messageBytes(datagram)) {
    datagram = datagram.subspan(std::min(datagram.size(), size_t{NLMSG_ALIGN(message->size())}));
    const auto notification = parseTableNotification(*message);
    if (!notification) continue;
    if (notification->message == NFT_MSG_NEWGEN) {
      if (pending_.empty()) continue;
      ++closed_;
      if (!isOurs_(notification->pid)) {
        foreign = true;
        if (found_.empty()) found_ = pending_;
      }
      pending_.clear();
    } else if (pending_.empty() && isOurTableChange(*notification)) {
      appendDescription(pending_, *notification);
    }
  }
  return foreign;
}

void TableChangeBatches::expirePending() {
  if (pending_.empty()) return;
  ++closed_;
  if (found_.empty()) found_ = pending_;
  pending_.clear();
}

std::string TableChangeBatches::takeChange() {
  std::string change;
  change.swap(found_);
  return change;
}

Result<TableEvents> TableEvents::open(int receiveBuffer) {
  const auto context = "cannot watch nf_tables changes";
  auto socket = netlink::NetlinkSocket::open(NETLINK_NETFILTER);
  if (!socket) return withContext(std::move(socket.error()), context);
  if (auto sized = socket->setReceiveBuffer(receiveBuffer); !sized) {
    return withContext(std::move(sized.error()), context);
  }
  if (auto joined = socket->joinGroup(NFNLGRP_NFTABLES); !joined) {
    return withContext(std::move(joined.error()), context);
  }
  return TableEvents(std::move(*socket));
}

Result<TableChange> TableEvents::wait(std::chrono::milliseconds timeout) {
  using Clock = std::chrono::steady_clock;
  const auto deadline = Clock::now() + timeout;
  TableChange result;
  for (int drained = 0;;) {
    const auto now = Clock::now();
    if (batches_.pending() && now - pendingSince_ >= kGenerationGrace) batches_.expirePending();
    if (std::string change = batches_.takeChange(); !change.empty()) {
      result.changed = true;
      if (result.firstChange.empty()) result.firstChange = std::move(change);
    }
    if (result.changed && ++drained > kMaxDrainedDatagrams) return result;

    // Once a change is known, only what is already queued is read. Otherwise wait until the
    // deadline, or until a pending change's NEWGEN is overdue.
    auto until = result.changed ? now : deadline;
    if (batches_.pending()) until = std::min(until, pendingSince_ + kGenerationGrace);
    const auto left = std::max(std::chrono::milliseconds(0),
                               std::chrono::ceil<std::chrono::milliseconds>(until - now));

    auto received = socket_.receive(buffer_, left);
    if (!received) {
      if (received.error().cause != std::errc::no_buffer_space) {
        return withContext(std::move(received.error()), "nf_tables change notifications");
      }
      batches_.reset();  // the NEWGEN of the batch being read may be among the lost
      result.changed = true;
      result.overflowed = true;
      continue;
    }
    if (!*received) {
      if (result.changed) return result;
      if (Clock::now() >= deadline) return result;
      continue;  // a pending change's grace ran out: the top of the loop settles it
    }
    const bool wasPending = batches_.pending();
    const uint64_t closedBefore = batches_.closed();
    batches_.feed(**received);
    if (batches_.pending() && (!wasPending || batches_.closed() != closedBefore)) {
      pendingSince_ = Clock::now();
    }
  }
}

}  // namespace hostport::nft::kernel
