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

namespace hostport::agent::service {
namespace {

using Clock = std::chrono::steady_clock;
using log::Component;
using log::Level;

/// More triggered passes than this in one window is someone editing our tables in a loop.
constexpr std::size_t kStormPasses = 20;
constexpr std::chrono::seconds kStormWindow{10};

/// What the kernel holds, by owner tag.
std::unordered_map<std::string, nft::AttachmentRules> byOwner(nft::TableState state) {
  std::unordered_map<std::string, nft::AttachmentRules> owners;
  for (auto& installed : state.forwards) {
    auto& rules = owners[installed.owner];
    rules.owner = installed.owner;
    rules.forwards.push_back(std::move(installed.forward));
  }
  for (auto& installed : state.masquerades) {
    auto& rules = owners[installed.owner];
    rules.owner = installed.owner;
    rules.masquerades.push_back(std::move(installed.masquerade));
  }
  return owners;
}

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

/// The pod subnets the leases record (nft::podSubnetsOf), each once. A lease without a
/// forwarding record forwards nothing and records none; a refused target's counts for nothing.
std::vector<IpPrefix> recordedSubnets(const std::vector<Lease>& leases) {
  std::vector<IpPrefix> subnets;
  for (const Lease& lease : leases) {
    if (!lease.forwarding || refusedTarget(*lease.forwarding)) continue;
    for (IpPrefix& subnet : nft::podSubnetsOf(forwards::podTargetOf(*lease.forwarding))) {
      if (std::ranges::find(subnets, subnet) == subnets.end()) subnets.push_back(std::move(subnet));
    }
  }
  return subnets;
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
  {
    // One read of the leases serves both: taken under the writer's lock, so the table compare
    // is consistent; liveness needs no more than that moment's view. Freed before finishPass()
    // hands the heap back.
    const bool quiet = generation && generation == repairedAt_;
    const std::vector<Lease> leases = reconcileElements(report, quiet);
    if (releaseVanishedToo) {
      std::vector<SandboxRef> sandboxes;
      for (const Lease& lease : leases) sandboxes.push_back(sandboxOf(lease));
      report.released = releaseVanished(sandboxes, started);
    }
  }
  comparedAt_ = report.compared ? generation : std::nullopt;
  if (report.compared) lastCompare_ = started;
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
                {"duration_ms", tookMs}});
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

std::vector<Lease> Reconciler::reconcileElements(PassReport& report, bool quiet) {
  // The dump is nearly all of a compare (the kernel walks its hash sets again for every message:
  // ~0.5 s at 65,535 leases). Without the writer's lock first: what it finds may be an ADD or a
  // DEL in flight, so anything to repair is compared again under the lock, but a table that
  // agrees with the leases, the usual case, never holds up a CNI call.
  if (reader_) {
    std::vector<Lease> leases = service_.list("", "");
    auto state = reader_->readElements();
    if (state && compare(leases, std::move(*state), *reader_).empty()) {
      (void)judgeRepeats({}, quiet);
      report.compared = true;
      return leases;
    }
  }
  auto lock = writer_.lock();
  std::vector<Lease> leases = service_.list("", "");
  auto state = writer_.ruleset().readElements();
  if (!state) {
    log::event(Component::kTable, Level::kWarn, "table.check_failed",
               {{"cause", state.error().message}});
    return leases;
  }
  report.compared = true;
  report.underLock = true;
  const Repairs repairs = compare(leases, std::move(*state), writer_.ruleset());
  repair(repairs, quiet, report);
  if (!repairs.empty()) {
    // Where our repair left the ruleset: a next compare that finds the same repairs with the
    // generation still here knows they did not hold.
    auto after = writer_.ruleset().generation();
    repairedAt_ = after ? *after : std::nullopt;
  }
  return leases;
}

Reconciler::Repairs Reconciler::compare(const std::vector<Lease>& leases, nft::TableState state,
                                        nft::Ruleset& lister) {
  Repairs repairs;
  // A subnet stays only when a lease's recorded subnet names it exactly: one that merely overlaps
  // them (0.0.0.0/0 from a forged prevResult) would masquerade every client toward every snat
  // pod, and serves no lease the kernel would not take its own subnet for. Decided before any
  // lease is compared, so a lease whose subnet such an entry stood in for is restored in this
  // pass, after the entry goes (repair()).
  const std::vector<IpPrefix> recorded = recordedSubnets(leases);
  std::vector<IpPrefix> podSubnets;
  for (IpPrefix& subnet : state.podSubnets) {
    const bool kept = std::ranges::find(recorded, subnet) != recorded.end();
    (kept ? podSubnets : repairs.unusedSubnets).push_back(std::move(subnet));
  }
  // What each lease has is taken out of `installed`; what is left then has no lease.
  auto installed = byOwner(std::move(state));
  for (const Lease& lease : leases) {
    auto owner = forwards::ownerOf(lease.key);
    if (!owner) continue;
    if (const auto refused = lease.forwarding ? refusedTarget(*lease.forwarding) : std::nullopt) {
      // The journal of an agent that took the plugin's word: the lease is kept (its DEL releases
      // it), but its forwards are neither laid out again nor left: they go with the strays.
      log::event(Component::kTable, Level::kError, "table.refused_target",
                 {keyField(lease.key), {"cause", *refused}});
      continue;
    }
    nft::AttachmentRules have{*owner, {}, {}, podSubnets};
    if (auto found = installed.find(*owner); found != installed.end()) {
      have.forwards = std::move(found->second.forwards);
      have.masquerades = std::move(found->second.masquerades);
      installed.erase(found);
    }
    if (!lease.forwarding) continue;  // it forwards nothing
    auto plan = forwards::planOf(lease);
    if (!plan) {
      log::event(Component::kTable, Level::kError, "table.unplannable",
                 {keyField(lease.key), {"cause", plan.error().message}});
      continue;
    }
    if (plan->rules.hasConditions()) {
      // Conditional forwards are rules, not elements: only a listing shows them.
      auto listed = lister.listOwned(*owner);
      if (!listed) continue;
      have.forwards = std::move(listed->forwards);
      have.masquerades = std::move(listed->masquerades);
    }
    // A kept subnet that overlaps the lease's serves it (nft::diff): the kernel refuses a subnet
    // nested in another network's.
    const nft::RulesDiff difference = nft::diff(plan->rules, have);
    nft::AttachmentRules extra{
        *owner, difference.unexpectedForwards, difference.unexpectedMasquerades, {}};
    if (plan->rules.hasConditions() || extra.hasConditions()) {
      if (!difference.empty() || conditionalRuleCount(have) != conditionalRuleCount(plan->rules)) {
        repairs.restores.push_back({&lease, difference.missing(), whatIsAmiss(difference, have),
                                    /*rewrite=*/true});
      }
      continue;
    }
    if (const std::size_t missing = difference.missing(); missing > 0) {
      repairs.restores.push_back({&lease, missing, difference.describeFirstMissing()});
    }
    if (!extra.empty()) repairs.strays.push_back({*owner, std::move(extra), "not in the lease"});
  }
  for (auto& [owner, rules] : installed) {
    // Elements whose comment is not our owner tag are someone else's: kept. Ours go whatever
    // they hold; a rule's conditions are never read to decide it.
    if (!nft::isOwnerTag(owner)) continue;
    const bool wholeOwner = rules.hasConditions();
    repairs.strays.push_back({owner, std::move(rules), "no lease", wholeOwner});
  }
  return repairs;
}

std::vector<bool> Reconciler::judgeRepeats(const Repairs& repairs, bool quiet) {
  std::vector<std::string> found;
  for (const auto& stray : repairs.strays) found.push_back(strayId(stray.owner));
  for (const auto& restore : repairs.restores) found.push_back(restoreId(restore.lease->key));
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
  for (const auto& restore : repairs.restores) {
    if (!due()) continue;
    Result<void> installedAgain;
    if (restore.rewrite) {
      auto owner = forwards::ownerOf(restore.lease->key);
      installedAgain = owner ? removeOwner(writer_.ruleset(), *owner)
                             : Result<void>(std::unexpected(owner.error()));
    }
    if (installedAgain) installedAgain = writer_.installLocked(*restore.lease);
    restores.record(installedAgain.has_value(),
                    {keyField(restore.lease->key),
                     {"missing", restore.missing},
                     {"first", restore.firstMissing},
                     {"rewritten", restore.rewrite},
                     {"cause", installedAgain ? std::string() : installedAgain.error().message}});
    if (!installedAgain) continue;
    ++report.leasesRestored;
    backoff_.carriedOut(restoreId(restore.lease->key));
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
      {
        const std::vector<SandboxRef> sandboxes = service_.sandboxes();
        releaseVanished(sandboxes, now);
        if (sandboxes.size() >= kTrimAfterSandboxes) returnFreedHeap();
      }
      lock.lock();
      nextLiveness = now + options_.livenessInterval;
    }
  }
}

}  // namespace hostport::agent::service
