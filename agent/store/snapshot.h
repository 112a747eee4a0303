#pragma once
// Snapshots and generations. Design note:
// - The state directory holds `snapshot` (generation G, all leases at the moment of the last
//   compaction) and the live journal `journal.G` (everything since). No snapshot means G = 0 and
//   no leases.
// - Snapshot file: "HPSN", u32 format version, u64 generation, u32 lease count, u64 body length,
//   body = per lease [u32 length][lease encoding], then u32 CRC-32C of everything before it.
//   After the leases, the body holds a u32 sticky entry count, per entry [u32 length]
//   [sticky entry encoding] (lease_codec.h), oldest first: the sticky memory, which the journal's
//   grants rebuild between snapshots but which compaction would otherwise drop with the released
//   leases. Format 3 (the lease codec's version) is the one written and the one read.
//   A snapshot only ever appears through rename, so any defect in it is loud corruption.
// - Compaction to G+1 is ordered so that a crash after any step leaves either (snapshot G,
//   journal.G) or (snapshot G+1, journal.G+1) complete on disk:
//     1. write snapshot.tmp (generation G+1), fsync it;
//     2. create journal.(G+1) holding only its header, fsync it;
//     3. fsync the directory, so both new files exist before the switch;
//     4. rename snapshot.tmp -> snapshot, fsync the directory: the durable switch (LevelDB);
//     5. unlink journal.G (best effort; startup deletes it otherwise).
//   Nothing is appended to journal.(G+1) until step 4 has returned, so at startup a journal.(G+1)
//   next to snapshot G is a leftover of an interrupted compaction and must be empty.
// - A new store gets its snapshot the same way, before it serves: journal.0 is created (header
//   fsynced, then the directory), then an empty snapshot of generation 0 is renamed into place
//   (writeFirstSnapshot). From then on every live journal is named by a snapshot, so a live
//   journal that is missing or shorter than its header was removed or cut after the fact, never
//   by a crash (journal_file.h). A store written before first snapshots existed (journal.0
//   alone) gets its first snapshot at its next start, when its journal.0 has been replayed.

#include <cstdint>
#include <filesystem>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "agent/store/file_ops.h"
#include "agent/store/journal_file.h"
#include "agent/store/lease_codec.h"
#include "common/error.h"
#include "lease/lease.h"

namespace hostport::agent::store {

inline constexpr std::string_view kSnapshotName = "snapshot";
inline constexpr std::string_view kSnapshotTmpName = "snapshot.tmp";
// Format N holds leases of lease codec version N (lease_codec.h).
inline constexpr uint32_t kSnapshotFormatVersion = kCodecVersion;

/// <dir>/journal.<generation>
std::filesystem::path journalPath(const std::filesystem::path& dir, uint64_t generation);
/// The generation of a "journal.<decimal>" file name; nullopt for any other name.
std::optional<uint64_t> parseJournalName(std::string_view name);

struct Snapshot {
  uint64_t generation = 0;
  std::vector<Lease> leases;
  std::vector<StickyEntry> sticky;  // oldest first
};

/// The whole snapshot file image; kInvalidArgument when a lease exceeds the codec's bounds.
Result<std::string> encodeSnapshot(uint64_t generation, const std::vector<Lease>& leases,
                                   const std::vector<StickyEntry>& sticky = {});
/// Parses a snapshot file image; kDecode naming what is wrong.
Result<Snapshot> decodeSnapshot(std::string_view image);

/// Reads <dir>/snapshot: kNotFound when there is none, kIo naming the file when it is corrupt.
Result<Snapshot> readSnapshot(FileOps& fs, const std::filesystem::path& dir);

/// A failed compaction, and whether the switch to the new generation may have happened.
struct CompactionError {
  Error error;
  /// False: the old snapshot and journal are untouched and stay live. True: the rename or the
  /// directory fsync after it failed, so which generation is durable is unknown.
  bool switchUncertain = false;
};

/// Makes journal.0 of a store with no snapshot live for good: an empty snapshot of generation 0
/// (the state before journal.0's first record), written as compaction writes one (steps 1, 3 and
/// 4). Call once journal.0's header is durable.
Result<void> writeFirstSnapshot(FileOps& fs, const std::filesystem::path& dir);

/// Runs compaction steps 1-5 (see above) and returns the new, empty live journal.
std::expected<JournalFile, CompactionError> compact(std::shared_ptr<FileOps> fs,
                                                    const std::filesystem::path& dir,
                                                    uint64_t newGeneration,
                                                    const std::vector<Lease>& leases,
                                                    const std::vector<StickyEntry>& sticky = {});

}  // namespace hostport::agent::store
