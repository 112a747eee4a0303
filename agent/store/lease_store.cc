#include "agent/store/lease_store.h"

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <system_error>

#include "agent/store/replay_state.h"
#include "agent/store/snapshot.h"

namespace hostport::agent::store {
namespace {

constexpr std::string_view kLockName = "lock";

/// Creates `dir` and its missing parents with mode 0700, and fsyncs the parent of each new
/// directory so the directory itself survives a power loss.
Result<void> makeDirs(FileOps& fs, const std::filesystem::path& dir) {
  if (fs.open(dir, O_RDONLY | O_DIRECTORY, 0)) return {};
  if (dir.has_parent_path() && dir.parent_path() != dir) {
    if (auto ok = makeDirs(fs, dir.parent_path()); !ok) return ok;
  }
  if (auto ok = fs.mkdir(dir, 0700); !ok) return ok;
  const auto parent = dir.has_parent_path() ? dir.parent_path() : std::filesystem::path(".");
  return fs.syncDir(parent);
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

Result<std::vector<Lease>> LeaseStore::recover() {
  if (recovered_) return fail(ErrorCode::kInternal, "lease store: recover() called twice");
  const auto started = std::chrono::steady_clock::now();
  const std::string where = "lease store " + dir_.string();
  RecoveryStats recovery;

  auto names = fs_->listDir(dir_);
  if (!names) return withContext(names.error(), where);

  ReplayState state;
  bool haveSnapshot = false;
  if (auto snapshot = readSnapshot(*fs_, dir_)) {
    haveSnapshot = true;
    recovery.generation = snapshot->generation;
    recovery.snapshotLeases = snapshot->leases.size();
    state.adopt(std::move(snapshot->leases));
  } else if (snapshot.error().code != ErrorCode::kNotFound) {
    return withContext(snapshot.error(), where);
  }
  const uint64_t generation = recovery.generation;

  // Sort the directory out before touching anything, so a refusal leaves every file as it was.
  bool haveLive = false;
  std::vector<std::filesystem::path> stale;
  for (const std::string& name : *names) {
    if (name == kSnapshotTmpName) {
      stale.push_back(dir_ / name);
      continue;
    }
    const auto fileGeneration = parseJournalName(name);
    if (!fileGeneration) continue;
    const auto path = dir_ / name;
    if (*fileGeneration == generation) {
      haveLive = true;
    } else if (*fileGeneration < generation) {
      stale.push_back(path);  // its records are in the snapshot
    } else if (*fileGeneration == generation + 1) {
      // Left by a compaction interrupted before its rename; it cannot hold records, because
      // nothing is appended to a journal before its snapshot is durable.
      auto fd = fs_->open(path, O_RDONLY, 0);
      if (!fd) return withContext(fd.error(), where);
      auto size = fs_->fileSize(fd->get());
      if (!size) return withContext(size.error(), where + ": " + path.string());
      if (*size > kJournalHeaderBytes) {
        return fail(ErrorCode::kIo, where + ": " + path.string() + " holds records but the " +
                                        "snapshot is at generation " + std::to_string(generation) +
                                        "; the snapshot may have been lost or replaced, refusing "
                                        "to start");
      }
      stale.push_back(path);
    } else {
      return fail(ErrorCode::kIo, where + ": " + path.string() +
                                      " is newer than the snapshot generation " +
                                      std::to_string(generation) +
                                      "; the snapshot may have been lost or replaced, refusing "
                                      "to start");
    }
  }

  const auto livePath = journalPath(dir_, generation);
  if (haveLive) {
    // Sizing the table up front saves rehashing and moving every lease as it grows; records are
    // rarely smaller than ~100 bytes, so this over-reserves a little at most.
    if (auto fd = fs_->open(livePath, O_RDONLY, 0)) {
      if (auto size = fs_->fileSize(fd->get())) {
        state.reserve(recovery.snapshotLeases + *size / 100);
      }
    }
    RecordSink apply = [&](std::string_view payload, uint64_t) -> Result<void> {
      auto record = decodeRecord(payload);
      if (!record) return std::unexpected(record.error());
      if (record->kind == JournalRecord::Kind::kGrant) {
        state.grant(std::move(record->lease));
      } else if (!state.release(record->lease.key)) {
        ++recovery.releasesOfUnknownKeys;
      }
      return {};
    };
    auto opened = JournalFile::open(fs_, livePath, generation, apply);
    if (!opened) return withContext(opened.error(), where);
    recovery.recordsReplayed = opened->scan.records;
    recovery.tornTailDropped = opened->scan.tornTail;
    recovery.tornBytes = opened->scan.tornBytes;
    journal_.emplace(std::move(opened->file));
  } else if (!haveSnapshot) {
    auto created = JournalFile::create(fs_, livePath, generation);
    if (!created) return withContext(created.error(), where);
    if (auto ok = fs_->syncDir(dir_); !ok) return withContext(ok.error(), where);
    journal_.emplace(std::move(*created));
  } else {
    return fail(ErrorCode::kIo, where + ": the snapshot is at generation " +
                                    std::to_string(generation) + " but " + livePath.string() +
                                    " is missing; acknowledged leases may be lost, refusing to "
                                    "start");
  }

  // Leftovers are harmless but confusing; if removing one fails the next start tries again.
  for (const auto& path : stale) {
    if (fs_->unlink(path)) ++recovery.staleFilesRemoved;
  }
  if (recovery.staleFilesRemoved > 0) (void)fs_->syncDir(dir_);

  std::vector<Lease> leases = state.takeSorted();

  recovery.elapsed = std::chrono::duration_cast<std::chrono::microseconds>(
      std::chrono::steady_clock::now() - started);
  {
    std::lock_guard guard(mu_);
    stats_.recovery = recovery;
    stats_.generation = generation;
    journalBytes_ = journal_->recordBytes();
  }
  try {
    committer_ = std::thread([this] { run(); });
  } catch (const std::system_error& error) {
    return fail(ErrorCode::kInternal,
                where + ": cannot start the committer thread: " + error.what());
  }
  recovered_ = true;
  return leases;
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

void LeaseStore::submitCompaction(std::vector<Lease> leases,
                                  std::function<void(Result<void>)> done) {
  enqueue(Item{CompactionItem{std::move(leases)}, std::move(done)});
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
  auto& leases = std::get<CompactionItem>(item.work).leases;
  const uint64_t next = journal_->generation() + 1;
  auto journal = compact(fs_, dir_, next, leases);
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
