#include "agent/store/lease_store.h"

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <system_error>

#include "agent/store/replay_state.h"
#include "agent/store/snapshot.h"
#include "agent/store/state_dir.h"

namespace hostport::agent::store {
namespace {

constexpr std::string_view kLockName = "lock";

/// Creates `dir` and its missing parents with mode 0700, and fsyncs the parent of each new
/// directory so the directory itself survives a power loss.
Result<void> makeDirs(FileOps& fs, const std::filesystem::path& dir) {
  if (fs.open(dir, O_RDONLY | O_DIRECTORY, 0)) return {};
  if (dir.has_parent_path() && dir.parent_path() != dir) {
    HOSTPORT_TRY_VOID(makeDirs(fs, dir.parent_path()));
  }
  HOSTPORT_TRY_VOID(fs.mkdir(dir, 0700));
  const auto parent = dir.has_parent_path() ? dir.parent_path() : std::filesystem::path(".");
  return fs.syncDir(parent);
}

/// Adopts <dir>/snapshot into `state`; its generation, or nullopt when there is none.
Result<std::optional<uint64_t>> adoptSnapshot(FileOps& fs, const std::filesystem::path& dir,
                                              ReplayState& state, RecoveryStats& recovery,
                                              const StickySink& sticky) {
  auto snapshot = readSnapshot(fs, dir);
  if (!snapshot) {
    if (snapshot.error().code == ErrorCode::kNotFound) return std::nullopt;
    return std::unexpected(std::move(snapshot).error());
  }
  recovery.generation = snapshot->generation;
  recovery.snapshotLeases = snapshot->leases.size();
  state.adopt(std::move(snapshot->leases));
  if (sticky) {
    for (const auto& entry : snapshot->sticky) sticky(entry);
  }
  return snapshot->generation;
}

/// Replays the live journal at `path` onto `state`, cutting a torn tail, and returns it open for
/// appends.
Result<JournalFile> replayJournal(const std::shared_ptr<FileOps>& fs,
                                  const std::filesystem::path& path, TornCreation torn,
                                  ReplayState& state, RecoveryStats& recovery,
                                  const StickySink& sticky) {
  // Sizing the table up front saves rehashing and moving every lease as it grows; records are
  // rarely smaller than ~100 bytes, so this over-reserves a little at most.
  if (auto fd = fs->open(path, O_RDONLY, 0)) {
    if (auto size = fs->fileSize(fd->get())) {
      state.reserve(recovery.snapshotLeases + *size / 100);
    }
  }
  RecordSink apply = [&](std::string_view payload, uint64_t) -> Result<void> {
    // A reference into the decoded Result: the lease is moved once, into the state.
    HOSTPORT_TRY(auto&& record, decodeRecord(payload));
    if (record.kind == JournalRecord::Kind::kGrant) {
      // Every grant, even of a lease released later: the memory of released pods is the point.
      if (sticky) sticky(stickyEntryOf(record.lease));
      state.grant(std::move(record.lease));
    } else if (!state.release(record.lease.key)) {
      ++recovery.releasesOfUnknownKeys;
    }
    return {};
  };
  HOSTPORT_TRY(JournalFile::Opened opened,
               JournalFile::open(fs, path, recovery.generation, torn, apply));
  recovery.recordsReplayed = opened.scan.records;
  recovery.tornTailDropped = opened.scan.tornTail;
  recovery.tornBytes = opened.scan.tornBytes;
  return std::move(opened.file);
}

/// Creates the live journal of a new store, its directory entry durable too.
Result<JournalFile> createJournal(const std::shared_ptr<FileOps>& fs,
                                  const std::filesystem::path& dir,
                                  const std::filesystem::path& path, uint64_t generation) {
  HOSTPORT_TRY(JournalFile created, JournalFile::create(fs, path, generation));
  HOSTPORT_TRY_VOID(fs->syncDir(dir));
  return created;
}

/// Removes `stale` and returns how many went. Leftovers are harmless but confusing; if removing
/// one fails, the next start tries again.
uint64_t removeLeftovers(FileOps& fs, const std::filesystem::path& dir,
                         const std::vector<std::filesystem::path>& stale) {
  uint64_t removed = 0;
  for (const auto& path : stale) {
    if (fs.unlink(path)) ++removed;
  }
  if (removed > 0) (void)fs.syncDir(dir);
  return removed;
}

std::string trimmed(std::string text) {
  while (!text.empty() && (text.back() == '\n' || text.back() == ' ')) text.pop_back();
  return text;
}

}  // namespace

Result<std::unique_ptr<LeaseStore>> LeaseStore::open(const std::filesystem::path& dir,
                                                     StoreOptions options) {
  if (!options.fileOps) options.fileOps = realFileOps();
  FileOps& fs = *options.fileOps;
  if (auto ok = makeDirs(fs, dir); !ok) {
    return withContext(ok.error(), "lease store: creating state directory " + dir.string());
  }
  auto lock = fs.open(dir / kLockName, O_RDWR | O_CREAT, 0600);
  if (!lock) return withContext(lock.error(), "lease store");
  if (auto ok = fs.lockExclusive(lock->get()); !ok) {
    if (ok.error().code != ErrorCode::kUnavailable) return withContext(ok.error(), "lease store");
    const auto holder = readAll(fs, lock->get());
    const std::string pid = holder ? trimmed(*holder) : std::string();
    return fail(ErrorCode::kUnavailable, "lease store: state directory " + dir.string() +
                                             " is in use by another hostport agent" +
                                             (pid.empty() ? std::string() : " (pid " + pid + ")"));
  }
  // The pid is only a hint for the message above, so failing to write it is not fatal.
  if (fs.ftruncate(lock->get(), 0)) {
    (void)writeAll(fs, lock->get(), std::to_string(::getpid()) + "\n", 0);
  }
  return std::unique_ptr<LeaseStore>(new LeaseStore(dir, std::move(options), std::move(*lock)));
}

LeaseStore::LeaseStore(std::filesystem::path dir, StoreOptions options, UniqueFd lock)
    : dir_(std::move(dir)),
      options_(std::move(options)),
      fs_(options_.fileOps),
      lock_(std::move(lock)) {}

LeaseStore::~LeaseStore() {
  {
    std::lock_guard guard(mu_);
    stopping_ = true;
  }
  wake_.notify_all();
  if (committer_.joinable()) committer_.join();
  // Only non-empty when the committer never ran (recover() was not called or failed).
  std::deque<Item> left;
  {
    std::lock_guard guard(mu_);
    exited_ = true;
    left.swap(queue_);
  }
  for (Item& item : left) {
    item.done(fail(ErrorCode::kUnavailable, "lease store closed before recovery completed"));
  }
}

Result<std::vector<Lease>> LeaseStore::recover(const StickySink& sticky) {
  if (recovered_) return fail(ErrorCode::kInternal, "lease store: recover() called twice");
  const auto started = std::chrono::steady_clock::now();
  const std::string where = "lease store " + dir_.string();
  RecoveryStats recovery;
  ReplayState state;

  auto names = fs_->listDir(dir_);
  if (!names) return withContext(names.error(), where);
  auto snapshotGeneration = adoptSnapshot(*fs_, dir_, state, recovery, sticky);
  if (!snapshotGeneration) return withContext(snapshotGeneration.error(), where);
  const StateDirPlan plan = classifyStateDir(dir_, *names, *snapshotGeneration);
  if (plan.nextJournal) {
    auto empty = checkNextJournalIsEmpty(*fs_, *plan.nextJournal, recovery.generation);
    if (!empty) return withContext(empty.error(), where);
  }
  if (plan.refusal) return withContext(*plan.refusal, where);
  // Nothing on disk has changed up to here, so each refusal above leaves every file as it was.
  // Only journal.0 before the store's first snapshot can have been left short by a crash.
  const bool hasSnapshot = snapshotGeneration->has_value();
  const TornCreation torn = hasSnapshot ? TornCreation::kImpossible : TornCreation::kPossible;
  auto journal = plan.liveJournalExists
                     ? replayJournal(fs_, plan.liveJournal, torn, state, recovery, sticky)
                     : createJournal(fs_, dir_, plan.liveJournal, recovery.generation);
  if (!journal) return withContext(journal.error(), where);
  recovery.staleFilesRemoved = removeLeftovers(*fs_, dir_, plan.stale);
  if (!hasSnapshot) {
    // Before serving: from here on the journal is named by a snapshot (snapshot.h).
    if (auto ok = writeFirstSnapshot(*fs_, dir_); !ok) return withContext(ok.error(), where);
  }
  journal_.emplace(std::move(*journal));
  std::vector<Lease> leases = state.takeSorted();

  recovery.elapsed = std::chrono::duration_cast<std::chrono::microseconds>(
      std::chrono::steady_clock::now() - started);
  if (auto ok = startCommitter(recovery); !ok) return withContext(ok.error(), where);
  recovered_ = true;
  return leases;
}

Result<void> LeaseStore::startCommitter(const RecoveryStats& recovery) {
  {
    std::lock_guard guard(mu_);
    stats_.recovery = recovery;
    stats_.generation = recovery.generation;
    journalBytes_ = journal_->recordBytes();
  }
  try {
    committer_ = std::thread([this] { run(); });
  } catch (const std::system_error& error) {
    return fail(ErrorCode::kInternal,
                std::string("cannot start the committer thread: ") + error.what());
  }
  return {};
}

void LeaseStore::submit(JournalRecord record, std::function<void(Result<void>)> done) {
  // Encoding and the CRC run on the caller's thread, so the committer only writes.
  RecordItem item;
  item.frame.assign(kFrameHeaderBytes, '\0');
  if (auto ok = encodeRecord(record, item.frame); ok) {
    sealFrame(item.frame);
  } else {
    item.encodeError = ok.error();
    item.frame.clear();
  }
  enqueue(Item{std::move(item), std::move(done)});
}

void LeaseStore::submitCompaction(std::vector<Lease> leases, std::function<void(Result<void>)> done,
                                  std::vector<StickyEntry> sticky) {
  enqueue(Item{CompactionItem{std::move(leases), std::move(sticky)}, std::move(done)});
}

void LeaseStore::enqueue(Item item) {
  {
    std::lock_guard guard(mu_);
    if (!exited_) {
      queue_.push_back(std::move(item));
      wake_.notify_one();
      return;
    }
  }
  // Submitting while the store is being destroyed is a caller bug; still, never drop a `done`.
  item.done(fail(ErrorCode::kUnavailable, "lease store is closed"));
}

uint64_t LeaseStore::journalBytes() const {
  std::lock_guard guard(mu_);
  return journalBytes_;
}

StoreStats LeaseStore::stats() const {
  std::lock_guard guard(mu_);
  return stats_;
}

void LeaseStore::run() {
  std::unique_lock lock(mu_);
  for (;;) {
    wake_.wait(lock, [&] { return stopping_ || !queue_.empty(); });
    if (queue_.empty()) {
      exited_ = true;  // stopping, and everything queued has been answered
      return;
    }
    std::deque<Item> items;
    size_t records = 0;
    const size_t maxRecords = std::max<size_t>(1, options_.maxBatchRecords);
    while (!queue_.empty() && records < maxRecords) {
      if (std::holds_alternative<RecordItem>(queue_.front().work)) ++records;
      items.push_back(std::move(queue_.front()));
      queue_.pop_front();
    }
    lock.unlock();
    size_t begin = 0;
    while (begin < items.size()) {
      if (std::holds_alternative<CompactionItem>(items[begin].work)) {
        runCompaction(items[begin]);
        ++begin;
        continue;
      }
      size_t end = begin;
      while (end < items.size() && std::holds_alternative<RecordItem>(items[end].work)) ++end;
      commitRecords(items, begin, end);
      begin = end;
    }
    items.clear();  // destroy callbacks and snapshots outside the lock
    lock.lock();
  }
}

void LeaseStore::commitRecords(std::deque<Item>& items, size_t begin, size_t end) {
  const size_t count = end - begin;
  if (failure_) {
    const Error error = failedError();
    {
      std::lock_guard guard(mu_);
      stats_.failedRecords += count;
    }
    for (size_t i = begin; i < end; ++i) items[i].done(std::unexpected(error));
    return;
  }

  std::string batch;
  size_t written = 0;
  for (size_t i = begin; i < end; ++i) {
    const auto& record = std::get<RecordItem>(items[i].work);
    if (record.encodeError) continue;
    if (batch.empty()) batch.reserve(record.frame.size() * (end - i));
    batch += record.frame;
    ++written;
  }

  Result<void> outcome;
  bool synced = false;
  if (!batch.empty()) {
    outcome = journal_->append(batch);
    if (outcome && options_.sync) {
      outcome = journal_->sync();
      synced = true;
    }
    if (!outcome) markFailed(outcome.error());
  }

  {
    std::lock_guard guard(mu_);
    const size_t rejected = count - written;
    if (outcome) {
      stats_.records += written;
      stats_.failedRecords += rejected;
      stats_.bytes += batch.size();
      if (written > 0) {
        ++stats_.batches;
        stats_.lastBatchRecords = written;
        stats_.maxBatchRecords = std::max<uint64_t>(stats_.maxBatchRecords, written);
      }
      journalBytes_ = journal_->recordBytes();
    } else {
      stats_.failedRecords += count;
    }
    if (synced) ++stats_.fsyncs;
  }

  for (size_t i = begin; i < end; ++i) {
    auto& record = std::get<RecordItem>(items[i].work);
    if (record.encodeError) {
      items[i].done(std::unexpected(std::move(*record.encodeError)));
    } else {
      items[i].done(outcome);
    }
  }
}

void LeaseStore::runCompaction(Item& item) {
  if (failure_) {
    item.done(std::unexpected(failedError()));
    return;
  }
  const auto& compaction = std::get<CompactionItem>(item.work);
  const uint64_t next = journal_->generation() + 1;
  auto journal = compact(fs_, dir_, next, compaction.leases, compaction.sticky);
  if (!journal) {
    if (journal.error().switchUncertain) markFailed(journal.error().error);
    item.done(std::unexpected(journal.error().error));
    return;
  }
  journal_.emplace(std::move(*journal));
  {
    std::lock_guard guard(mu_);
    ++stats_.compactions;
    stats_.generation = next;
    journalBytes_ = 0;
  }
  item.done({});
}

void LeaseStore::markFailed(const Error& cause) {
  if (failure_) return;
  failure_ = cause;
  {
    std::lock_guard guard(mu_);
    stats_.failed = true;
  }
  if (options_.onFailure) options_.onFailure(cause);
}

Error LeaseStore::failedError() const {
  return Error{ErrorCode::kIo,
               "lease store failed earlier and acknowledges nothing more; restart the agent (" +
                   failure_->message + ")",
               {}};
}

}  // namespace hostport::agent::store
