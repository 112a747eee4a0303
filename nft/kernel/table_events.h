#pragma once
// Noticing, within milliseconds, that someone else changed our tables (`table ip hostport`,
// `table ip6 hostport`): a flushed map, a deleted element, rule, chain, set or the table itself.
// The agent's reconciler waits on this and runs a full check when it reports a change; the
// periodic check stays as the backstop for anything missed.
//
// Design note:
// - One NETLINK_NETFILTER socket in the NFNLGRP_NFTABLES group, in the network namespace of the
//   thread that opens it. nf_tables sends one notification per committed change to every member.
// - What is reported: every delete in our table (DELTABLE, DELCHAIN, DELRULE, DELSET, DELSETELEM
//   and their DESTROY forms; a flush arrives as one DELSETELEM or DELRULE per object) and every
//   edit of its layout (NEWTABLE, which is also how a table is made dormant, NEWCHAIN, NEWRULE,
//   NEWSET): any of these can break a leased forward. Added elements (NEWSETELEM) are not: they
//   cannot remove a forward, and a stray one is the periodic check's to find. Other tables, and
//   our name in other families (inet, bridge...), are not ours.
// - Our own changes are not reported, or the reconciler would wake itself up in a loop. nf_tables
//   ends every committed batch with an NFT_MSG_NEWGEN notification after all of the batch's own
//   ones (the commit mutex is held throughout, so batches never interleave; verified on 6.18).
//   NEWGEN carries NFTA_GEN_PROC_PID: the kernel's task_pid_nr(current), the id of the *thread*
//   that sent the batch (the commit runs in its sendmsg), in the initial pid namespace. So the
//   interesting notifications are held until their NEWGEN and dropped when that thread is one of
//   this process's (getpid(), or /proc/self/task/<tid> exists). Our netlink sockets all count,
//   whatever their port ids. The `nft` command that writes rules with conditions (nft_context.h)
//   is another process: its changes are reported, and cost one compare that finds all well. It
//   needs the agent in the host's pid namespace (the DaemonSet sets hostPID); in a
//   pid namespace of its own, every change would look foreign: spurious checks, nothing missed.
//   A thread that exits before its batch is read also looks foreign, with the same harmless cost.
// - A change whose NEWGEN does not follow within kGenerationGrace (none ever seen; it would be a
//   kernel that reports without a generation) is reported as foreign.
// - Lost notifications: when the socket's buffer overflows the kernel drops messages and the
//   next receive fails with ENOBUFS. That is reported as `overflowed` (anything may have changed:
//   the consumer runs its full check). The buffer is large (kDefaultReceiveBuffer) so that a
//   flush of a big map usually fits.

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "common/error.h"
#include "netlink/socket.h"

namespace hostport::nft::kernel {

/// One nf_tables notification as far as TableEvents reads it. The views point into the message.
struct TableNotification {
  uint16_t message = 0;  // NFT_MSG_*
  uint8_t family = 0;    // NFPROTO_*
  std::string_view table;
  std::string_view object;  // the chain, set or map named, when the message names one
  uint32_t pid = 0;         // NEWGEN only: NFTA_GEN_PROC_PID, the committing thread
};

/// Reads one nf_tables notification; nullopt for a message of another subsystem or malformed
/// bytes.
std::optional<TableNotification> parseTableNotification(std::span<const std::byte> message);

/// True for a notification TableEvents reports: a delete or a layout edit in our ip/ip6 table.
bool isOurTableChange(const TableNotification& notification);

/// What the change was, as nft would say it: "delete element ip hostport ports".
std::string describeTableChange(const TableNotification& notification);

/// True when `pid` (a NEWGEN's NFTA_GEN_PROC_PID) is this process or one of its live threads.
bool isThreadOfThisProcess(uint32_t pid);

/// Groups notifications into committed batches and keeps the foreign ones that touch our tables.
/// Pure (ownership is a predicate), so the ordering rules are unit-tested with plain bytes.
class TableChangeBatches {
 public:
  using IsOurs = bool (*)(uint32_t pid);
  explicit TableChangeBatches(IsOurs isOurs = isThreadOfThisProcess) : isOurs_(isOurs) {}

  /// Feeds every message of one datagram, in order. Returns true when a NEWGEN closed a batch
  /// that holds a change to our tables made by someone else; takeChange() then says what.
  bool feed(std::span<const std::byte> datagram);

  /// True while a change to our tables waits for the NEWGEN of its batch.
  bool pending() const { return !pending_.empty(); }
  /// Gives up waiting for that NEWGEN: the pending change counts as foreign.
  void expirePending();
  /// The first foreign change found since the last call, or empty; clears it.
  std::string takeChange();
  /// Forgets a half-read batch (its NEWGEN may have been lost with an overflow).
  void reset() { pending_.clear(); }
  /// How many batches holding a change to our tables were closed by their NEWGEN so far, so a
  /// caller can tell a new pending batch from one it already waits for.
  uint64_t closed() const { return closed_; }

 private:
  IsOurs isOurs_;
  uint64_t closed_ = 0;
  std::string pending_;  // the first change of the batch being read
  std::string found_;    // the first foreign change not yet taken
};

/// What one wait() saw.
struct TableChange {
  bool changed = false;     // someone else changed our tables, or may have (overflowed)
  bool overflowed = false;  // notifications were lost: anything may have changed
  std::string firstChange;  // "delete element ip hostport ports"; empty when only overflowed
};

/// A subscription to changes of our tables made by other processes, in the calling thread's netns.
class TableEvents {
 public:
  static constexpr int kDefaultReceiveBuffer = 8 * 1024 * 1024;
  static constexpr std::chrono::milliseconds kGenerationGrace{100};

  static Result<TableEvents> open(int receiveBuffer = kDefaultReceiveBuffer);

  /// Waits up to `timeout` for a foreign change and returns as soon as one is complete (after
  /// reading whatever else is already queued, so that a burst counts once). `changed` is false
  /// when the time ran out first. An error only when the socket itself fails.
  Result<TableChange> wait(std::chrono::milliseconds timeout);

  /// Readable when a notification is queued: to poll() it with a stop signal.
  int fd() const { return socket_.fd(); }

 private:
  explicit TableEvents(netlink::NetlinkSocket socket)
      : socket_(std::move(socket)), buffer_(kDatagramSize) {}

  // nf_tables notifications are built in NLMSG_GOODSIZE skbs (at most a page or two).
  static constexpr size_t kDatagramSize = 64 * 1024;

  netlink::NetlinkSocket socket_;
  std::vector<std::byte> buffer_;
  TableChangeBatches batches_;
  std::chrono::steady_clock::time_point pendingSince_{};
};

}  // namespace hostport::nft::kernel
