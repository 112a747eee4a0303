#include "agent/service/reconciler.h"

#include <algorithm>
#include <future>
#include <unordered_map>
#include <utility>

#include "agent/api/node_files.h"
#include "agent/log/event_log.h"
#include "agent/service/netns_id.h"
#include "agent/service/repair_log.h"
#include "agent/service/service_log.h"
#include "common/atomic_file.h"
#include "common/heap.h"
#include "common/pod_address.h"
#include "forwards/lease_forwards.h"
#include "nft/element_ledger.h"

namespace hostport::agent::service {
namespace {

using Clock = std::chrono::steady_clock;
using log::Component;
using log::Level;

/// More triggered passes than this in one window is someone editing our tables in a loop.
constexpr std::size_t kStormPasses = 20;
constexpr std::chrono::seconds kStormWindow{10};

/// Everything `owner` holds goes, rules of the conditional chain included (found by a listing);
/// what went is not needed.
Result<void> removeOwner(nft::Ruleset& ruleset, const std::string& owner) {
  HOSTPORT_TRY_VOID(ruleset.remove(owner));
  return {};
}

/// A repair's identity for the backoff: what it repairs.
std::string strayId(const std::string& owner) { return "remove " + owner; }
std::string restoreId(const AttachmentKey& key) { return "restore " + key.str(); }

std::size_t conditionalRuleCount(const nft::AttachmentRules& rules) {
  return static_cast<std::size_t>(std::ranges::count_if(
      rules.forwards, [](const nft::Forward& forward) { return !forward.conditions.empty(); }));
}

/// Why a lease with rules of the conditional chain is rewritten, for table.restored's `first`.
std::string whatIsAmiss(const nft::RulesDiff& difference, const nft::AttachmentRules& have) {
  if (difference.missing() > 0) return difference.describeFirstMissing();
  if (!difference.unexpectedForwards.empty()) {
    return "unexpected " + nft::describe(difference.unexpectedForwards.front());
  }
  if (!difference.unexpectedMasquerades.empty()) {
    return "unexpected masquerade " + nft::describe(difference.unexpectedMasquerades.front());
  }
  return std::to_string(conditionalRuleCount(have)) + " rules where the lease has fewer";
}

/// "127.0.0.1/8 is a loopback address: ..." when the lease records a pod address no pod may have
/// (common/pod_address.h): one an agent granted before it checked them. None when it is fine.
std::optional<std::string> refusedTarget(const Forwarding& forwarding) {
  for (const auto& pod : {forwarding.podV4, forwarding.podV6}) {
    if (!pod) continue;
    if (const Problem problem = podAddressProblem(*pod)) {
      return pod->str() + " " + std::string(*problem);
    }
  }
  return std::nullopt;
}

}  // namespace

Reconciler::Reconciler(AgentService& service, ForwardWriter& writer,
                       std::unique_ptr<nft::kernel::LayoutGuard> guard,
                       std::unique_ptr<nft::Ruleset> reader, Metrics& metrics,
                       ReconcilerOptions options)
    : service_(service),
      writer_(writer),
      guard_(std::move(guard)),
      reader_(std::move(reader)),
      metrics_(metrics),
      options_(std::move(options)) {
  // A release that could not remove its forwards, nor keep its lease, left them behind.
  writer_.onLeftBehind([this] { trigger(); });
}

Reconciler::~Reconciler() {
  writer_.onLeftBehind({});
  stop();
}

void Reconciler::startUp() { releasedAtStart_ = consumeReleaseSpool(); }

void Reconciler::run(std::optional<nft::kernel::TableEvents> events) {
  thread_ = std::thread([this] {
    pass(true);
    loop();
  });
  if (!events) return;
  events_ = std::move(events);
  watching_ = true;
  eventsThread_ = std::thread([this] { watchEvents(); });
}

void Reconciler::watchEvents() {
  // Short waits, so stop() is never kept waiting long.
  constexpr std::chrono::milliseconds kPoll{200};
  while (watching_) {
    auto change = events_->wait(kPoll);
    if (!change) {
      log::event(Component::kTable, Level::kError, "table.events_failed",
                 {{"cause", change.error().message}, {"fallback", "the periodic pass"}});
      return;
    }
    if (!change->changed) continue;
    log::event(Component::kTable, Level::kInfo, "table.changed",
               {{"first", change->firstChange}, {"overflowed", change->overflowed}});
    trigger();
  }
}

void Reconciler::trigger() {
  {
    std::lock_guard guard(mutex_);
    triggered_ = true;
  }
  wake_.notify_one();
}

void Reconciler::stop() {
  watching_ = false;
  if (eventsThread_.joinable()) eventsThread_.join();
  {
    std::lock_guard guard(mutex_);
    stopping_ = true;
  }
  wake_.notify_one();
  if (thread_.joinable()) thread_.join();
}

PassReport Reconciler::pass(bool releaseVanishedToo) {
  const auto started = Clock::now();
  PassReport report;
  const bool released = std::exchange(releasedAtStart_, false) || consumeReleaseSpool();
  // Read before anything is checked: whatever changes after this moves the generation on, so
  // the pass after it compares.
  const std::optional<uint32_t> generation = currentGeneration();
  const bool compareDue = releaseVanishedToo || released || writer_.takeFailedWrite() ||
                          !generation || generation != comparedAt_ ||
                          started - lastCompare_ >= kCompareAtLeastEvery * options_.period;
  if (!compareDue) {
    report.unchanged = true;
    finishPass(report, started);
    return report;
  }
  report.layoutRepaired = repairLayout();
  reconcileElements(report);
  if (releaseVanishedToo) {
    std::vector<SandboxRef> sandboxes;
    (void)service_.forEachLeaseChunk([&](std::span<const Lease> chunk) {
      for (const Lease& lease : chunk) sandboxes.push_back(sandboxOf(lease));
    });
    report.released = releaseVanished(sandboxes, started);
  }
  // A pass whose repairs the backoff held back has not brought the table to the leases: the
  // passes after it compare again (and carry them out once their wait is over) instead of taking
  // the unmoved generation for "nothing to do" until the forced compare, ten periods on (found
  // by the flush bench: 11 s instead of 1).
  const bool settled = report.compared && report.deferred == 0;
  comparedAt_ = settled ? generation : std::nullopt;
  if (settled) lastCompare_ = started;
  finishPass(report, started);
  return report;
}

std::optional<uint32_t> Reconciler::currentGeneration() {
  // Through the reconciler's own socket; without one, through the writer's under its lock: a
  // netlink socket carries one request at a time, and a read beside an ADD's or DEL's batch on
  // the writer's socket took the batch's reply (found by the soak, docs/soak.md).
  auto generation = [&] {
    if (reader_) return reader_->generation();
    auto lock = writer_.lock();
    return writer_.ruleset().generation();
  }();
  if (generation) return *generation;
  log::event(Component::kTable, Level::kWarn, "table.check_failed",
             {{"cause", generation.error().message}});
  return std::nullopt;
}

void Reconciler::finishPass(const PassReport& report, Clock::time_point started) {
  const auto took = Clock::now() - started;
  metrics_.observeReconcile(took, !report.unchanged);
  // A compare at 50,000 leases holds ~100 MB of transient leases and elements; glibc keeps
  // freed memory for reuse, so without this the agent's RSS would stay at that peak.
  if (report.compared) returnFreedHeap();
  const auto tookMs = std::chrono::duration_cast<std::chrono::milliseconds>(took).count();
  const bool repaired = report.layoutRepaired || report.leasesRestored > 0 ||
                        report.straysRemoved > 0 || report.subnetsRemoved > 0 ||
                        report.released > 0;
  if (repaired || log::enabled(Component::kTable, Level::kDebug)) {
    log::event(Component::kTable, repaired ? Level::kInfo : Level::kDebug, "table.reconciled",
               {{"unchanged", report.unchanged},
                {"under_lock", report.underLock},
                {"layout_repaired", report.layoutRepaired},
                {"leases_restored", report.leasesRestored},
                {"strays_removed", report.straysRemoved},
                {"subnets_removed", report.subnetsRemoved},
                {"vanished_released", report.released},
                {"repairs_deferred", report.deferred},
                {"duration_ms", tookMs},
                {"compare_ms", report.compareTime.count() / 1000},
                {"repair_ms", report.repairTime.count() / 1000}});
  }
}

bool Reconciler::consumeReleaseSpool() {
  if (options_.releaseSpool.empty()) return false;
  auto notes = api::readReleaseNotes(options_.releaseSpool);
  if (!notes) {
    log::event(Component::kAlloc, Level::kWarn, "alloc.release_note_unreadable",
               {{"spool", options_.releaseSpool.string()}, {"cause", notes.error().message}});
    return false;
  }
  if (notes->empty()) return false;
  std::vector<AttachmentKey> keys;
  for (const auto& note : *notes) {
    if (note.key) {
      keys.push_back(*note.key);
      continue;
    }
    // A note nobody can read would be logged at every pass; it goes, loudly.
    log::event(Component::kAlloc, Level::kError, "alloc.release_note_unreadable",
               {{"path", note.path.string()}, {"cause", note.key.error().message}});
    (void)removeFile(note.path);
  }
  std::promise<Result<std::vector<Lease>>> promise;
  auto future = promise.get_future();
  service_.releaseKeys(
      keys, AgentService::ReleaseVia::kReleaseNote,
      [&promise](Result<std::vector<Lease>> released) { promise.set_value(std::move(released)); });
  const auto released = future.get();
  if (!released) {
    log::event(Component::kAlloc, Level::kError, "alloc.release_notes_failed",
               {{"cause", released.error().message}});
    return true;  // the notes stay for the next pass; compare, in case some went through
  }
  for (const auto& note : *notes) {
    if (note.key) (void)removeFile(note.path);
  }
  log::event(Component::kAlloc, Level::kInfo, "alloc.release_notes_consumed",
             {{"notes", keys.size()}, {"released", released->size()}});
  return !released->empty();
}

bool Reconciler::repairLayout() {
  if (!guard_) return false;
  auto checked = guard_->check();
  if (!checked) {
    log::event(Component::kTable, Level::kWarn, "table.check_failed",
               {{"cause", checked.error().message}});
    return false;
  }
  switch (*checked) {
    case nft::kernel::LayoutCheck::kLaidOut:
      log::event(Component::kTable, Level::kInfo, "table.laid_out",
                 {{"tables", "ip/hostport,ip6/hostport"},
                  {"check_every_s",
                   std::chrono::duration_cast<std::chrono::seconds>(options_.period).count()}});
      return false;
    case nft::kernel::LayoutCheck::kRepaired:
      // Someone edited our fixed chains: they are laid out again.
      log::event(Component::kTable, Level::kWarn, "table.repaired",
                 {{"tables", "ip/hostport,ip6/hostport"}});
      metrics_.countRepairs(Metrics::Repair::kLayout, 1);
      return true;
    case nft::kernel::LayoutCheck::kIntact:
      return false;
  }
  return false;
}

void Reconciler::reconcileElements(PassReport& report) {
  // The dump is nearly all of a compare (the kernel walks its hash sets again for every message:
  // ~0.35 s at 65,535 leases). Without the writer's lock first: what it finds may be an ADD or a
  // DEL in flight, so a table that agrees with the leases, the usual case, never holds up a CNI
  // call. What it finds to repair stands when the ruleset generation, read before the leases
  // were, has not moved by the time the lock is held: then nothing was committed since, so no
  // element can have come or gone behind the leases' backs (a grant installs and a release
  // removes only under the lock, and each moves the generation). Otherwise the compare is done
  // again under the lock. `quiet` (RepairBackoff) is judged by the generation the compare that
  // found the repairs saw: one read at the pass's start can predate a flush the dump then sees.
  std::unique_lock<std::mutex> lock;
  if (reader_) {
    const auto before = reader_->generation();
    const bool quiet = before && *before && **before == repairedAt_;
    auto repairs = timedCompare(*reader_, report);
    if (repairs && repairs->empty()) {
      (void)judgeRepeats({}, quiet);
      report.compared = true;
      return;
    }
    lock = writer_.lock();
    const auto now = writer_.ruleset().generation();
    if (repairs && before && *before && now && *now && **before == **now) {
      report.compared = true;
      report.underLock = true;
      repairUnder(*repairs, quiet, report);
      return;
    }
  } else {
    lock = writer_.lock();
  }
  const auto seen = writer_.ruleset().generation();
  const bool quiet = seen && *seen && **seen == repairedAt_;
  auto repairs = timedCompare(writer_.ruleset(), report);
  if (!repairs) {
    log::event(Component::kTable, Level::kWarn, "table.check_failed",
               {{"cause", repairs.error().message}});
    return;
  }
  report.compared = true;
  report.underLock = true;
  repairUnder(*repairs, quiet, report);
}

Result<Reconciler::Repairs> Reconciler::timedCompare(nft::Ruleset& table, PassReport& report) {
  const auto started = Clock::now();
  auto repairs = compare(table);
  report.compareTime +=
      std::chrono::duration_cast<std::chrono::microseconds>(Clock::now() - started);
  return repairs;
}

void Reconciler::repairUnder(const Repairs& repairs, bool quiet, PassReport& report) {
  const auto started = Clock::now();
  repair(repairs, quiet, report);
  report.repairTime = std::chrono::duration_cast<std::chrono::microseconds>(Clock::now() - started);
  // Only a pass that wrote moves the mark: one whose repairs were all held back left the
  // generation where someone else put it, and proves nothing about ours.
  if (report.leasesRestored + report.straysRemoved + report.subnetsRemoved > 0) {
    // Where our repair left the ruleset: a next compare that finds the same repairs with the
    // generation still here knows they did not hold.
    auto after = writer_.ruleset().generation();
    repairedAt_ = after ? *after : std::nullopt;
  }
}

Result<Reconciler::Repairs> Reconciler::compare(nft::Ruleset& table) {
  // Each lease's plan is what the ledger expects of the dump, under a number the ledger gives
  // back with what is missing (ElementLedger::ownerOf names its attachment); a lease that
  // forwards nothing expects nothing, a lease whose forwards have conditions is compared through
  // a listing of its owner instead (rules are not elements), and one that cannot be planned is
  // left as it is.
  nft::ElementLedger ledger;
  struct Listed {
    Lease lease;
    std::string owner;
    nft::AttachmentRules planned;
  };
  std::vector<Listed> conditional;
  // The pod subnets the leases record (nft::podSubnetsOf), each once. A lease without a
  // forwarding record forwards nothing and records none; a refused target's counts for nothing.
  // A settling lease's subnet is recorded all the same: a repeated ADD of a lease already in
  // settles too.
  std::vector<IpPrefix> recorded;
  uint32_t expected = 0;
  const std::vector<AttachmentKey> settling =
      service_.forEachLeaseChunk([&](std::span<const Lease> chunk) {
        for (const Lease& lease : chunk) {
          auto owner = forwards::ownerOf(lease.key);
          if (!owner) continue;
          if (const auto refused =
                  lease.forwarding ? refusedTarget(*lease.forwarding) : std::nullopt) {
            // The journal of an agent that took the plugin's word: the lease is kept (its DEL
            // releases it), but its forwards are neither laid out again nor left: they go with
            // the strays.
            log::event(Component::kTable, Level::kError, "table.refused_target",
                       {keyField(lease.key), {"cause", *refused}});
            continue;
          }
          if (!lease.forwarding) {
            // It forwards nothing: whatever its tag holds is not in the lease.
            ledger.expect(expected++, nft::AttachmentRules{std::move(*owner), {}, {}, {}});
            continue;
          }
          for (IpPrefix& subnet : nft::podSubnetsOf(forwards::podTargetOf(*lease.forwarding))) {
            if (std::ranges::find(recorded, subnet) == recorded.end()) recorded.push_back(subnet);
          }
          auto plan = forwards::planOf(lease);
          if (!plan) {
            log::event(Component::kTable, Level::kError, "table.unplannable",
                       {keyField(lease.key), {"cause", plan.error().message}});
            ledger.tolerate(*owner);
            continue;
          }
          if (plan->rules.hasConditions()) {
            ledger.tolerate(*owner);
            conditional.push_back({lease, std::move(*owner), std::move(plan->rules)});
            continue;
          }
          ledger.expect(expected++, plan->rules);
        }
      });
  for (const AttachmentKey& key : settling) {
    if (auto owner = forwards::ownerOf(key)) ledger.tolerate(*owner);
  }
  const auto settled = [&](const AttachmentKey& key) {
    return !std::ranges::binary_search(settling, key);
  };
  HOSTPORT_TRY_VOID(table.scanElements(ledger));

  Repairs repairs;
  // A subnet stays only when a lease's recorded subnet names it exactly: one that merely overlaps
  // them (0.0.0.0/0 from a forged prevResult) would masquerade every client toward every snat
  // pod, and serves no lease the kernel would not take its own subnet for. Decided before any
  // lease is judged, so a lease whose subnet such an entry stood in for is restored in this
  // pass, after the entry goes (repair()).
  std::vector<IpPrefix> podSubnets;
  for (IpPrefix& subnet : ledger.takePodSubnets()) {
    const bool kept = std::ranges::find(recorded, subnet) != recorded.end();
    (kept ? podSubnets : repairs.unusedSubnets).push_back(std::move(subnet));
  }
  // What no lease expects as it is. Under a lease's own tag: an element is removed by key; a
  // rule of the conditional chain (a lease without conditions has none) has the lease rewritten.
  std::map<uint32_t, std::string> rewrites;
  for (auto& [owner, rules] : ledger.takeUnexpected()) {
    if (const auto lease = ledger.attachmentOf(owner)) {
      if (rules.hasConditions()) {
        const auto rule = std::ranges::find_if(rules.forwards, [](const nft::Forward& forward) {
          return !forward.conditions.empty();
        });
        rewrites.emplace(*lease, "unexpected " + nft::describe(*rule));
      } else {
        repairs.strays.push_back({owner, std::move(rules), "not in the lease"});
      }
      continue;
    }
    // Elements whose comment is not our owner tag are someone else's: kept. Ours go whatever
    // they hold; a rule's conditions are never read to decide it.
    if (!nft::isOwnerTag(owner)) continue;
    const bool wholeOwner = rules.hasConditions();
    repairs.strays.push_back({owner, std::move(rules), "no lease", wholeOwner});
  }
  // A settling attachment's queued write brings it to its lease (or takes it away).
  const auto keyOf = [&](uint32_t attachment) {
    auto key = forwards::keyOfOwner(ledger.ownerOf(attachment));
    return key && settled(*key) ? key : std::nullopt;
  };
  for (nft::ElementLedger::Missing& missing : ledger.missing(podSubnets)) {
    const auto rewrite = rewrites.extract(missing.attachment);
    if (auto key = keyOf(missing.attachment)) {
      repairs.restores.push_back(
          {std::move(*key), missing.count, std::move(missing.first), !rewrite.empty()});
    }
  }
  for (auto& [attachment, why] : rewrites) {
    if (auto key = keyOf(attachment)) {
      repairs.restores.push_back({std::move(*key), 0, std::move(why), /*rewrite=*/true});
    }
  }
  for (Listed& listed : conditional) {
    if (!settled(listed.lease.key)) continue;
    // Conditional forwards are rules, not elements: only a listing shows them. Anything amiss is
    // rewritten whole.
    auto have = table.listOwned(listed.owner);
    if (!have) continue;
    have->podSubnets = podSubnets;
    const nft::RulesDiff difference = nft::diff(listed.planned, *have);
    if (!difference.empty() ||
        conditionalRuleCount(*have) != conditionalRuleCount(listed.planned)) {
      repairs.restores.push_back({listed.lease.key, difference.missing(),
                                  whatIsAmiss(difference, *have), /*rewrite=*/true});
    }
  }
  return repairs;
}

std::vector<bool> Reconciler::judgeRepeats(const Repairs& repairs, bool quiet) {
  std::vector<std::string> found;
  for (const auto& stray : repairs.strays) found.push_back(strayId(stray.owner));
  for (const auto& restore : repairs.restores) found.push_back(restoreId(restore.key));
  const RepairBackoff::Verdict verdict = backoff_.judge(found, quiet, Clock::now());
  if (!verdict.newlyStuck.empty()) {
    log::event(Component::kTable, Level::kWarn, "table.repair_not_converging",
               {{"repairs", verdict.newlyStuck.size()},
                log::untrusted("first", verdict.newlyStuck.front()),
                {"retry_in_ms", verdict.longestWait.count()},
                {"hint",
                 "the table still differs from the leases right after a repair that nothing "
                 "else undid; retried with a growing wait"}});
  }
  if (!verdict.recovered.empty()) {
    log::event(Component::kTable, Level::kInfo, "table.repair_converged",
               {{"repairs", verdict.recovered.size()},
                log::untrusted("first", verdict.recovered.front())});
  }
  return verdict.carryOut;
}

void Reconciler::repair(const Repairs& repairs, bool quiet, PassReport& report) {
  const std::vector<bool> carryOut = judgeRepeats(repairs, quiet);
  std::size_t next = 0;
  const auto due = [&] {
    if (carryOut[next++]) return true;
    ++report.deferred;
    return false;
  };
  // Strays go first: one can hold the very key a lease needs (an element added again with the
  // same key and data keeps its old tag, or an element of the lease's own owner with other data),
  // and removing it after the restore would take the lease's forward down with it.
  RepairLog strays("table.stray_removed", "table.stray_remove_failed");
  for (const auto& stray : repairs.strays) {
    if (!due()) continue;
    auto removed = stray.wholeOwner ? removeOwner(writer_.ruleset(), stray.owner)
                                    : writer_.ruleset().removeExact(stray.rules);
    strays.record(removed.has_value(),
                  {log::untrusted("owner", stray.owner),
                   {"elements", stray.rules.forwards.size() + stray.rules.masquerades.size()},
                   {"why", removed ? std::string(stray.why) : removed.error().message}});
    if (!removed) continue;
    ++report.straysRemoved;
    backoff_.carriedOut(strayId(stray.owner));
  }
  // Then subnets no lease records: a restore's own subnet, nested in one of them, is refused by
  // the kernel while it is there.
  if (!repairs.unusedSubnets.empty()) report.subnetsRemoved = removeSubnets(repairs.unusedSubnets);
  RepairLog restores("table.restored", "table.restore_failed");
  const auto record = [&](const Repairs::Restore& restore, const Result<void>& installedAgain) {
    restores.record(installedAgain.has_value(),
                    {keyField(restore.key),
                     {"missing", restore.missing},
                     {"first", restore.firstMissing},
                     {"rewritten", restore.rewrite},
                     {"cause", installedAgain ? std::string() : installedAgain.error().message}});
    if (!installedAgain) return;
    ++report.leasesRestored;
    backoff_.carriedOut(restoreId(restore.key));
  };
  // Leases with rules go one at a time (their owner's rules go first); the others in batches of
  // thousands, one transaction each (ForwardWriter::restoreLocked).
  std::vector<const Repairs::Restore*> carried;
  for (const auto& restore : repairs.restores) {
    if (due()) carried.push_back(&restore);
  }
  // A transaction's worth at a time, each lease read as it is now: under the writer's lock, a
  // lease compared is still there but for a grant whose journal write failed since (taken back,
  // nothing to restore). Never every lease of a flushed table at once (~45 MB at 65,535).
  for (std::size_t from = 0; from < carried.size(); from += ForwardWriter::kRestoreBatch) {
    const std::span<const Repairs::Restore* const> chunk = std::span(carried).subspan(
        from, std::min(ForwardWriter::kRestoreBatch, carried.size() - from));
    std::vector<AttachmentKey> keys;
    keys.reserve(chunk.size());
    for (const Repairs::Restore* restore : chunk) keys.push_back(restore->key);
    const std::vector<std::optional<Lease>> current = service_.leasesOf(keys);
    std::vector<const Repairs::Restore*> batched;
    std::vector<const Lease*> leases;
    for (std::size_t i = 0; i < chunk.size(); ++i) {
      const Repairs::Restore& restore = *chunk[i];
      if (!current[i]) continue;
      if (!restore.rewrite) {
        batched.push_back(&restore);
        leases.push_back(&*current[i]);
        continue;
      }
      auto owner = forwards::ownerOf(restore.key);
      Result<void> installedAgain = owner ? removeOwner(writer_.ruleset(), *owner)
                                          : Result<void>(std::unexpected(owner.error()));
      if (installedAgain) installedAgain = writer_.installLocked(*current[i]);
      record(restore, installedAgain);
    }
    const std::vector<Result<void>> restored = writer_.restoreLocked(leases);
    for (std::size_t i = 0; i < batched.size(); ++i) record(*batched[i], restored[i]);
  }
  strays.finish();
  restores.finish();
  metrics_.countRepairs(Metrics::Repair::kMissing, report.leasesRestored);
  metrics_.countRepairs(Metrics::Repair::kStray, report.straysRemoved + report.subnetsRemoved);
}

std::size_t Reconciler::removeSubnets(const std::vector<IpPrefix>& unused) {
  std::string listed;
  for (const IpPrefix& subnet : unused) listed += (listed.empty() ? "" : ",") + subnet.str();
  auto removed = writer_.ruleset().removePodSubnets(unused);
  log::event(Component::kTable, removed ? Level::kInfo : Level::kError,
             removed ? "table.subnets_removed" : "table.subnets_remove_failed",
             {{"subnets", listed},
              {"why", removed ? std::string("no lease records them") : removed.error().message}});
  return removed ? unused.size() : 0;
}

std::size_t Reconciler::releaseVanished(const std::vector<SandboxRef>& sandboxes,
                                        Clock::time_point now) {
  std::map<AttachmentKey, Clock::time_point> stillGone;
  std::vector<AttachmentKey> due;
  for (const SandboxRef& sandbox : sandboxes) {
    if (netnsLiveness(sandbox) != NetnsLiveness::kGone) continue;
    const auto seen = goneSince_.find(sandbox.key);
    const auto since = seen == goneSince_.end() ? now : seen->second;
    if (now - since >= options_.vanishedGrace) {
      log::event(Component::kAlloc, Level::kInfo, "alloc.vanished",
                 {keyField(sandbox.key), log::untrusted("netns", sandbox.netns)});
      due.push_back(sandbox.key);
    } else {
      stillGone.emplace(sandbox.key, since);
    }
  }
  goneSince_ = std::move(stillGone);
  if (due.empty()) return 0;
  metrics_.countVanished(due.size());
  const std::size_t count = due.size();
  service_.releaseKeys(std::move(due), AgentService::ReleaseVia::kVanished,
                       [](Result<std::vector<Lease>> released) {
                         if (!released) {
                           log::event(Component::kAlloc, Level::kError, "alloc.vanished_failed",
                                      {{"cause", released.error().message}});
                         }
                       });
  return count;
}

void Reconciler::loop() {
  auto nextFull = Clock::now() + options_.period;
  auto nextLiveness = Clock::now() + options_.livenessInterval;
  Clock::time_point lastPass{};
  Clock::time_point stormWindow = Clock::now();
  std::size_t passesInWindow = 0;
  bool stormLogged = false;
  std::unique_lock lock(mutex_);
  while (!stopping_) {
    wake_.wait_until(lock, std::min(nextFull, nextLiveness),
                     [this] { return stopping_ || triggered_; });
    if (stopping_) break;
    auto now = Clock::now();
    if (triggered_ || now >= nextFull) {
      if (now - lastPass < options_.minPassGap) {
        // Coalesce: whatever else changes meanwhile is seen by the pass after the gap.
        wake_.wait_until(lock, lastPass + options_.minPassGap, [this] { return stopping_; });
        if (stopping_) break;
        now = Clock::now();
      }
      const bool byEvent = triggered_;
      triggered_ = false;
      if (now - stormWindow >= kStormWindow) {
        stormWindow = now;
        passesInWindow = 0;
        stormLogged = false;
      }
      if (byEvent && ++passesInWindow > kStormPasses && !stormLogged) {
        log::event(Component::kTable, Level::kWarn, "table.repair_storm",
                   {{"passes", passesInWindow},
                    {"window_s", kStormWindow.count()},
                    {"hint",
                     "something keeps editing table ip/ip6 hostport; repairs are "
                     "rate-limited"}});
        stormLogged = true;
      }
      lock.unlock();
      pass(false);
      lock.lock();
      lastPass = now;
      nextFull = now + options_.period;
    }
    if (now >= nextLiveness) {
      lock.unlock();
      std::size_t judged = 0;
      {
        const std::vector<SandboxRef> sandboxes = service_.sandboxes();
        releaseVanished(sandboxes, now);
        judged = sandboxes.size();
      }
      // Once they are freed: a trim while they were still held (the first cut) kept ~15 MB of
      // them resident at 65,535 leases until the next compare's trim.
      if (judged >= kTrimAfterSandboxes) returnFreedHeap();
      lock.lock();
      nextLiveness = now + options_.livenessInterval;
    }
  }
}

}  // namespace hostport::agent::service
