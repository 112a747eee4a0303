#pragma once
// The durable lease store: an acknowledged lease is never lost. Design note:
//
// Files in the state directory (created 0700, files 0600):
//   lock        flock'd by the running agent, holds its pid (informational)
//   snapshot    all leases as of the last compaction, generation G; an empty one of generation
//               0 from the store's first start until then (see snapshot.h)
//   journal.G   records since that snapshot (see journal_file.h; codec in lease_codec.h)
// What recovery makes of these and of the leftovers of interrupted compactions: state_dir.h.
//
// Lifecycle: open() takes the lock; recover() reads snapshot + journal once, cuts a torn tail,
// removes leftovers of interrupted compactions, writes the first snapshot of a store that has
// none, and starts the committer thread; then submit() and submitCompaction() from any thread.
// Records submitted before recover() wait for it.
//
// Group commit: one committer thread takes everything queued, writes the records in submission
// order with one pwrite, issues ONE fdatasync for the batch, then calls each `done` in submission
// order. Callbacks run on the committer thread with no store lock held: they may call submit(),
// must not throw, and must not destroy the store. They may do bounded, ordered kernel I/O, and
// the agent's do: the service installs a grant's forwards and removes a release's there
// (agent/service/agent_service.cc, ForwardWriter), because callbacks come in journal order on
// one thread, so a release and a re-grant of the same port reach the kernel in the order they
// were journaled (docs/design.md, "Who writes the table"). Bounded: one netlink batch with its
// reply per lease, no wait on anything but the kernel. Anything slower or unbounded (an API
// server, a lock another thread holds across I/O) would stall every later acknowledgement.
//
// Failure policy (the safe option, as LevelDB's background error and PostgreSQL after
// "fsyncgate"): after a failed write or fdatasync the journal tail is unknown, and on Linux a
// retried fsync can report success for pages the kernel already dropped. So the store does not
// truncate and retry: it becomes failed. The batch's callbacks get the error, every later
// submit() and submitCompaction() fails with kIo "store failed earlier", and `onFailure` fires
// once. The agent should exit and let its DaemonSet restart it; recover() on the next start
// reads what truly reached the disk. A failed record is "unknown", not "absent": it may reappear
// after restart, which the caller must tolerate (the reconciler releases leases whose netns is
// gone). A compaction that fails before its rename leaves the old generation live and does not
// fail the store; a failed rename or directory fsync does.
//
// Options: `sync` is on by default. Turning it off skips fdatasync (acknowledgements then survive
// an agent crash but not a power loss) and exists only for benchmarks.

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <filesystem>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <variant>
#include <vector>

#include "agent/store/file_ops.h"
#include "agent/store/journal_file.h"
#include "agent/store/lease_codec.h"
#include "common/error.h"
#include "common/unique_fd.h"
#include "lease/lease.h"

namespace hostport::agent::store {

/// Receives the sticky memory as recovery reads it, in the order it was recorded: the snapshot's
/// entries (oldest first), then what each replayed grant did (stickyEntryOf). Applying them in
/// order to a sticky memory rebuilds it (agent/core/sticky_memory.h), bounded as it is.
using StickySink = std::function<void(const StickyEntry&)>;

struct StoreOptions {
  /// fdatasync every batch. Never turn off outside benchmarks.
  bool sync = true;
  /// Records per batch at most, so one write and one callback burst stay bounded.
  size_t maxBatchRecords = 4096;
  /// The syscall seam; null means the real syscalls.
  std::shared_ptr<FileOps> fileOps;
  /// Called once, on the committer thread, when the store becomes failed (see the design note);
  /// typically logs and asks the agent to exit. Must not destroy the store.
  std::function<void(const Error&)> onFailure;
};

/// What recover() found.
struct RecoveryStats {
  uint64_t generation = 0;
  uint64_t snapshotLeases = 0;
  uint64_t recordsReplayed = 0;
  uint64_t releasesOfUnknownKeys = 0;
  bool tornTailDropped = false;
  uint64_t tornBytes = 0;
  uint64_t staleFilesRemoved = 0;
  std::chrono::microseconds elapsed{0};
};

struct StoreStats {
  uint64_t records = 0;        // records acknowledged as durable
  uint64_t failedRecords = 0;  // records whose `done` got an error
  uint64_t batches = 0;        // batches written
  uint64_t fsyncs = 0;         // fdatasync/fsync calls made for batches (one per batch)
  uint64_t bytes = 0;          // journal bytes written since open
  uint64_t lastBatchRecords = 0;
  uint64_t maxBatchRecords = 0;
  uint64_t compactions = 0;  // successful ones
  uint64_t generation = 0;   // of the live journal
  bool failed = false;       // see the failure policy; reopen required
  RecoveryStats recovery;
};

class LeaseStore {
 public:
  /// Takes an exclusive flock on <dir>/lock (non-blocking): a second agent on the same state dir
  /// gets kUnavailable naming the dir and the holder's pid. Creates the dir (0700) if missing.
  static Result<std::unique_ptr<LeaseStore>> open(const std::filesystem::path& dir,
                                                  StoreOptions options = {});

  LeaseStore(const LeaseStore&) = delete;
  LeaseStore& operator=(const LeaseStore&) = delete;
  /// Drains the queue (every pending `done` is called), joins the committer, releases the lock.
  ~LeaseStore();

  /// Leases as of the last durable record (snapshot + journal replay), sorted by key. Call once,
  /// before relying on submit(); details of what was found are in stats().recovery. `sticky`,
  /// when given, receives the sticky memory (see StickySink).
  Result<std::vector<Lease>> recover(const StickySink& sticky = {});

  /// Group commit: queues the record; `done` gets success once it is durable, or the error.
  void submit(JournalRecord record, std::function<void(Result<void>)> done);

  /// Queues a compaction with the full state as of this point in the submission order: records
  /// before it go to the old journal, `leases` and `sticky` (the sticky memory, oldest first)
  /// become the new snapshot, later records go to the new journal. Call under the same lock as
  /// submit() so both match the order.
  void submitCompaction(std::vector<Lease> leases, std::function<void(Result<void>)> done,
                        std::vector<StickyEntry> sticky = {});

  /// Record bytes in the live journal, for the caller's compaction policy.
  uint64_t journalBytes() const;
  StoreStats stats() const;
  const std::filesystem::path& dir() const { return dir_; }

 private:
  struct RecordItem {
    std::string frame;                 // the framed, encoded record, ready to write
    std::optional<Error> encodeError;  // set: not written, `done` gets this
  };
  struct CompactionItem {
    std::vector<Lease> leases;
    std::vector<StickyEntry> sticky;
  };
  struct Item {
    std::variant<RecordItem, CompactionItem> work;
    std::function<void(Result<void>)> done;
  };

  LeaseStore(std::filesystem::path dir, StoreOptions options, UniqueFd lock);

  /// Publishes what recover() found and starts the committer thread.
  Result<void> startCommitter(const RecoveryStats& recovery);
  void enqueue(Item item);
  void run();
  /// Writes and syncs items[begin, end) (all records) and calls their callbacks.
  void commitRecords(std::deque<Item>& items, size_t begin, size_t end);
  void runCompaction(Item& item);
  /// Enters the failed state (once) and returns the error later work gets.
  void markFailed(const Error& cause);
  Error failedError() const;

  const std::filesystem::path dir_;
  const StoreOptions options_;
  const std::shared_ptr<FileOps> fs_;
  UniqueFd lock_;

  // Owned by the committer thread once it runs (recover() before that).
  std::optional<JournalFile> journal_;
  std::optional<Error> failure_;  // also read under mu_ through stats_.failed
  bool recovered_ = false;

  mutable std::mutex mu_;
  std::condition_variable wake_;
  std::deque<Item> queue_;     // guarded by mu_
  bool stopping_ = false;      // guarded by mu_
  bool exited_ = false;        // guarded by mu_: the committer will take no more work
  StoreStats stats_;           // guarded by mu_
  uint64_t journalBytes_ = 0;  // guarded by mu_
  std::thread committer_;
};

}  // namespace hostport::agent::store
