#pragma once
// One loop that brings the kernel and the leases into agreement (agent mode, where the agent is
// the one writer of table ip/ip6 hostport). A pass:
//   1. checks the fixed layout of our tables and lays it out again when someone edited it
//      (nft/kernel/layout_guard.h);
//   2. reads every element of our maps and set over netlink and compares them with the leases
//      (first without the writer's lock, through a socket of its own, so ADD and DEL never wait
//      for the dump; only when that finds something is the compare done again under the lock):
//      a lease's missing forwards are installed again (a flushed map, a deleted element or table,
//      a crash between the journal write and the install); owner-tagged elements without a lease
//      are removed (a DEL the agent never saw, a lease released while it was down). Elements whose
//      comment is not our owner tag are someone else's and are never touched. The pod subnets,
//      shared by the leases in them, are restored with any lease that needs one and deleted once
//      no lease records them exactly (one wider than a lease's own serves none: 0.0.0.0/0 would
//      masquerade every client). A lease whose recorded pod address no pod may have
//      (common/pod_address.h; granted before the agent checked) has its elements removed, never
//      restored, and is logged (table.refused_target). Rules of the conditional chain count by
//      their owner tag too: an owner-tagged rule without a lease goes, whatever its conditions
//      hold; a lease with conditions is compared through a listing of its owner (our own part of
//      each rule, never the user's matches: nft/table_state.h), and anything amiss there is
//      rewritten whole (Repairs::Restore::rewrite). A repair found again with nothing else changed
//      did not converge, and waits before it is tried again (repair_backoff.h);
//   3. releases leases whose sandbox is gone (netns_id.h) for longer than the grace: a pod deleted
//      while the agent was down, whose DEL never came.
// Passes run at start (first thing on the loop's thread, as the socket starts to serve), when
// someone else changes our tables (the
// events of nft/kernel/table_events.h, or trigger(): a repair in milliseconds), and every
// `period` as a backstop. A pass first reads the netns's nf_tables generation, which every
// committed transaction moves on: when it is where the last compare left it, and nothing else
// calls for one (a release note, a failed write, ten periods without a compare), nothing can
// have changed and the pass compares nothing (~0.1 ms instead of a dump of every element).
// Liveness is checked more often (`livenessInterval`), as it only stats paths. A trigger storm
// (someone flushing in a loop) is rate-limited to one pass per `minPassGap` and logged once.
//
// At start, before the socket serves, the release spool is consumed: a DEL made while the agent
// was down is never undone, even when the sandbox's netns still exists, and no grant made after
// the socket serves can be undone by a note older than it. The first pass does not hold the
// socket back: at 65,535 leases it takes longer than recovering them, and ADD and DEL are
// consistent with it anyway (the writer's lock); a lease whose forwards a crash kept out of the
// kernel is restored by it within milliseconds of the socket serving, or by the plugin's retried
// ADD, whichever comes first.

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <filesystem>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <thread>

#include "agent/service/agent_service.h"
#include "agent/service/forward_writer.h"
#include "agent/service/metrics.h"
#include "agent/service/repair_backoff.h"
#include "nft/kernel/layout_guard.h"
#include "nft/kernel/table_events.h"

namespace hostport::agent::service {

struct ReconcilerOptions {
  std::chrono::milliseconds period{30'000};  // tableRepairSeconds: the backstop
  std::chrono::milliseconds livenessInterval{2'000};
  std::chrono::milliseconds vanishedGrace{10'000};  // a sandbox being torn down is left alone
  std::chrono::milliseconds minPassGap{100};
  std::filesystem::path releaseSpool;  // empty: none
};

/// What one pass found and did, for logs and tests.
struct PassReport {
  bool layoutRepaired = false;
  std::size_t leasesRestored = 0;  // leases whose missing forwards were installed again
  std::size_t straysRemoved = 0;   // owners whose elements had no lease
  std::size_t subnetsRemoved = 0;  // pod subnets no lease recorded
  std::size_t released = 0;        // leases released because their sandbox was gone
  std::size_t deferred = 0;        // repairs held back: they did not converge (repair_backoff.h)
  bool compared = false;           // the table was read and compared with every lease
  bool underLock = false;  // ...and ADD and DEL waited for it (there was something to repair)
  bool unchanged = false;  // skipped: nothing changed in the ruleset since the last compare
  /// Of the pass's time: reading leases and kernel and comparing them (both compares when the
  /// first found something and had to be done again under the lock), and writing the repairs.
  std::chrono::microseconds compareTime{0};
  std::chrono::microseconds repairTime{0};
};

class Reconciler {
 public:
  /// `guard` may be null (no layout check, for tests over a fake ruleset). `reader`, the
  /// reconciler's own view of the table for the compare without the writer's lock, may be null:
  /// every compare then takes the lock.
  Reconciler(AgentService& service, ForwardWriter& writer,
             std::unique_ptr<nft::kernel::LayoutGuard> guard, std::unique_ptr<nft::Ruleset> reader,
             Metrics& metrics, ReconcilerOptions options);
  ~Reconciler();

  /// Consumes the release spool; call before the socket serves. Errors are logged, never fatal:
  /// the agent can grant ports without it.
  void startUp();
  /// Starts the loop on its own thread, whose first pass compares the whole table and judges
  /// liveness, and, with `events`, a second thread that triggers a pass as soon as someone else
  /// changes our tables.
  void run(std::optional<nft::kernel::TableEvents> events = std::nullopt);
  /// Asks for a full pass soon (coalesced; rate-limited).
  void trigger();
  void stop();

  /// One full pass now, on the calling thread. `releaseVanished`: judge liveness too.
  PassReport pass(bool releaseVanished = true);

 private:
  /// What one compare of the kernel with the leases found to repair.
  struct Repairs {
    struct Stray {
      std::string owner;
      nft::AttachmentRules rules;
      std::string_view why;
      /// Everything the owner holds goes (Ruleset::remove): it holds rules of the conditional
      /// chain, which only a listing finds.
      bool wholeOwner = false;
    };
    struct Restore {
      AttachmentKey key;  // its lease is read again when it is carried out
      std::size_t missing;
      std::string firstMissing;
      /// The lease holds rules of the conditional chain: what its owner holds goes first, then
      /// the lease is installed afresh. A rule is appended by every install, so installing over
      /// what is there would add a copy of each rule that was not missing.
      bool rewrite = false;
    };
    std::vector<Stray> strays;
    std::vector<Restore> restores;
    std::vector<IpPrefix> unusedSubnets;  // pod subnets no lease records
    bool empty() const { return strays.empty() && restores.empty() && unusedSubnets.empty(); }
  };

  /// True when a note released something (the table changed under the writer).
  bool consumeReleaseSpool();
  std::optional<uint32_t> currentGeneration();
  void finishPass(const PassReport& report, std::chrono::steady_clock::time_point started);
  bool repairLayout();
  /// Compares the kernel with the leases and repairs it, under the writer's lock.
  void reconcileElements(PassReport& report);
  /// What the leases need that `table` lacks, and what it holds that they do not: its elements
  /// scanned against what the leases expect (nft/element_ledger.h), the leases read a chunk at a
  /// time (AgentService::forEachLeaseChunk), and the rules of leases with conditions, which no
  /// element dump shows, listed. What a settling attachment's owner holds is left to its queued
  /// write.
  Result<Repairs> compare(nft::Ruleset& table);
  /// compare(), its time added to the report's.
  Result<Repairs> timedCompare(nft::Ruleset& table, PassReport& report);
  /// Carries `repairs` out, but those the backoff holds back; under the writer's lock.
  void repair(const Repairs& repairs, bool quiet, PassReport& report);
  /// repair(), then notes where it left the ruleset generation (repairedAt_).
  void repairUnder(const Repairs& repairs, bool quiet, PassReport& report);
  /// Tells the backoff what a compare found, logs what it judged, and returns which to carry out
  /// (strays first, then restores, as in `repairs`).
  std::vector<bool> judgeRepeats(const Repairs& repairs, bool quiet);
  /// Deletes the pod subnets; how many went.
  std::size_t removeSubnets(const std::vector<IpPrefix>& unused);
  std::size_t releaseVanished(const std::vector<SandboxRef>& sandboxes,
                              std::chrono::steady_clock::time_point now);
  void loop();
  void watchEvents();

  AgentService& service_;
  ForwardWriter& writer_;
  std::unique_ptr<nft::kernel::LayoutGuard> guard_;
  std::unique_ptr<nft::Ruleset> reader_;
  Metrics& metrics_;
  ReconcilerOptions options_;
  /// A pass compares whenever the generation moved, and at least this many backstop periods
  /// apart even when it did not (defence in depth: a failed write leaves it where it was).
  static constexpr int kCompareAtLeastEvery = 10;
  /// A liveness check over this many sandboxes freed enough to hand back (a few MB); small nodes
  /// skip the trim.
  static constexpr std::size_t kTrimAfterSandboxes = 4096;
  /// startUp() released something: the first pass compares (it would anyway: nothing compared yet).
  bool releasedAtStart_ = false;
  /// The ruleset generation read just before the last compare that completed.
  std::optional<uint32_t> comparedAt_;
  /// The ruleset generation read just after the last repair, under the writer's lock.
  std::optional<uint32_t> repairedAt_;
  RepairBackoff backoff_;
  std::chrono::steady_clock::time_point lastCompare_{};
  /// Keys whose netns was first seen gone, and when.
  std::map<AttachmentKey, std::chrono::steady_clock::time_point> goneSince_;

  std::mutex mutex_;
  std::condition_variable wake_;
  bool triggered_ = false;
  bool stopping_ = false;
  std::thread thread_;
  std::optional<nft::kernel::TableEvents> events_;
  std::atomic<bool> watching_{false};
  std::thread eventsThread_;
};

}  // namespace hostport::agent::service
