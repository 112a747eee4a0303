#pragma once
// What each file of the state directory is to recovery, decided from the names alone before
// anything is touched, so a refusal leaves every file as it was. Design note: with the snapshot
// at generation G (no snapshot: G = 0; see snapshot.h for the compaction order),
//   journal.G        the live journal. Replayed; missing is a refusal when there is a snapshot
//                    (its records would be lost) and a new store when there is none, unless
//                    journal.1 is there: only a compaction makes one, and its old journal.0 goes
//                    after its snapshot is in place, so both gone means the snapshot was lost.
//                    Short: journal_file.h says when a crash can leave it so.
//   journal.<G       stale: its records are in the snapshot, its unlink had not happened.
//   journal.(G+1)    left by a compaction interrupted before its rename. Stale only if it holds
//                    no records, which needs its size: checkNextJournalIsEmpty() asks FileOps.
//   journal.>(G+1)   refused: the snapshot may have been lost or replaced.
//   snapshot.tmp     stale: an interrupted compaction's snapshot, never renamed.
//   anything else    not the store's; left alone.
// Messages name the file; the caller adds which store it is.

#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>
#include <vector>

#include "agent/store/file_ops.h"
#include "common/error.h"

namespace hostport::agent::store {

/// How recovery is to treat the state directory's files (see the design note).
struct StateDirPlan {
  /// journal.G, whether or not it exists.
  std::filesystem::path liveJournal;
  /// True: replay the live journal. False: create it (only without a snapshot: a new store).
  bool liveJournalExists = false;
  /// journal.(G+1) when present. It is also in `stale`, but must pass checkNextJournalIsEmpty()
  /// before anything is touched; check it before acting on `refusal`, so that of two faults the
  /// one listed first is reported.
  std::optional<std::filesystem::path> nextJournal;
  /// Leftovers to remove once the live journal is open, in the order listed.
  std::vector<std::filesystem::path> stale;
  /// Set: recovery must not start (kIo). The names after a journal newer than G+1 are not
  /// looked at, and only `nextJournal` is meaningful then.
  std::optional<Error> refusal;
};

/// Sorts the entries `names` of `dir` out for a snapshot at `snapshotGeneration` (nullopt: no
/// snapshot). Pure: asks nothing of the file system.
StateDirPlan classifyStateDir(const std::filesystem::path& dir,
                              const std::vector<std::string>& names,
                              std::optional<uint64_t> snapshotGeneration);

/// kIo refusing `path` (journal.(G+1) next to snapshot `snapshotGeneration`) when it holds
/// records: nothing is appended to a journal before its snapshot is durable, so records there
/// mean the snapshot of G+1 was lost or replaced.
Result<void> checkNextJournalIsEmpty(FileOps& fs, const std::filesystem::path& path,
                                     uint64_t snapshotGeneration);

}  // namespace hostport::agent::store
