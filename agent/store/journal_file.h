#pragma once
// The append-only journal file. Design note:
// - Layout: a 16-byte header ("HPJL", u32 format version, u64 generation, little-endian), then
//   frames [u32 payload length][u32 CRC-32C of payload][payload]. The generation in the header
//   must match the file name journal.<generation>, so a misplaced file is caught, not replayed.
// - A torn tail is what a crash during the last append leaves: fewer than 8 header bytes, a
//   payload that runs past the end of the file, or a bad CRC on a frame with nothing valid after
//   it. Those bytes were never acknowledged (the fdatasync had not returned), so open() cuts them
//   away and later appends start on a clean boundary.
// - A bad frame that is followed by any valid frame is not a torn tail: records after it were
//   acknowledged. That is a loud kIo error naming the file and byte offset, and nothing is
//   truncated, so an operator can inspect the file. A zero length or a length above
//   kMaxRecordBytes is invalid, so zero-filled space after a crash is never mistaken for a record.
// - Writes use pwrite at a tracked offset instead of O_APPEND, so the end is exactly what this
//   process wrote and synced.
// - A header shorter than 16 bytes (an empty file too) is a creation torn by a crash only where
//   a crash can leave one, and is refused everywhere else. create() writes the header and fsyncs
//   it; a journal becomes live when a snapshot of its generation is renamed into place, and that
//   rename comes after the header's fsync and a directory fsync (snapshot.h, compaction steps
//   2-4; a new store's first snapshot, writeFirstSnapshot(), after createJournal's). So:
//     journal.G next to snapshot G      live, its header durable: short is a refusal (kIo naming
//                                       the file), as a missing one is (state_dir.h). Open with
//                                       TornCreation::kImpossible.
//     journal.0 with no snapshot        a new store that crashed before its first snapshot, or a
//                                       store written before every store had one: no record of it
//                                       was acknowledged while its header was short (the agent
//                                       serves after recovery, which fsyncs the header first).
//                                       Short is started over. TornCreation::kPossible.
//     journal.(G+1) next to snapshot G  a compaction that crashed before its rename: never
//                                       opened, only checked to hold no record and removed
//                                       (state_dir.h), whatever its length.
//   What this cannot tell: a live journal cut back to its header or to a frame boundary reads as
//   one with fewer records, and journal.0 emptied next to no snapshot (only a store written
//   before first snapshots existed has that) as a torn creation.

#include <cstdint>
#include <filesystem>
#include <functional>
#include <memory>
#include <string>
#include <string_view>

#include "agent/store/file_ops.h"
#include "common/error.h"
#include "common/unique_fd.h"

namespace hostport::agent::store {

inline constexpr uint32_t kJournalFormatVersion = 1;
inline constexpr size_t kJournalHeaderBytes = 16;
inline constexpr size_t kFrameHeaderBytes = 8;

/// The 16 header bytes of journal.<generation>.
std::string journalHeader(uint64_t generation);
/// Appends one frame holding `payload` to `out`.
void appendFrame(std::string& out, std::string_view payload);
/// Fills in the frame header at the start of `frame`, whose payload was encoded right after
/// kFrameHeaderBytes placeholder bytes (saves copying the payload).
void sealFrame(std::string& frame);

/// What a scan found: `validEnd` is the file offset just past the last good record.
struct JournalScan {
  uint64_t records = 0;
  uint64_t validEnd = 0;
  bool tornTail = false;
  uint64_t tornBytes = 0;
};

/// Called with each good record's payload and its frame's file offset. An error stops the scan
/// and is reported with the file name and offset.
using RecordSink = std::function<Result<void>(std::string_view payload, uint64_t offset)>;

/// Scans the frames of `file` (a whole journal image) from offset `start`. Pure: no I/O. `name`
/// is used in error messages.
Result<JournalScan> scanFrames(std::string_view file, uint64_t start, std::string_view name,
                               const RecordSink& sink);

/// Whether a crash can have left a journal's header short (see the design note).
enum class TornCreation {
  kImpossible,  // a snapshot names this journal: a short header is a loud kIo error
  kPossible,    // journal.0 before the store's first snapshot: a short header is started over
};

class JournalFile {
 public:
  struct Opened;

  /// Creates journal.<generation> at `path` holding only its header, fsynced. Replaces a stale
  /// file of that name. The caller fsyncs the directory.
  static Result<JournalFile> create(std::shared_ptr<FileOps> fs, std::filesystem::path path,
                                    uint64_t generation);
  /// Opens an existing journal, feeds every good record to `sink` in order, and cuts a torn
  /// tail away (ftruncate + fsync). A header shorter than 16 bytes is, with `torn` kPossible, a
  /// journal whose creation was torn: it held no records and is rewritten empty; with
  /// kImpossible, a file cut or emptied after the fact: kIo naming it, the file left as it is.
  static Result<Opened> open(std::shared_ptr<FileOps> fs, std::filesystem::path path,
                             uint64_t generation, TornCreation torn, const RecordSink& sink);

  JournalFile(JournalFile&&) = default;
  JournalFile& operator=(JournalFile&&) = default;

  /// Writes already framed bytes at the end. On error the bytes past the old end are unknown:
  /// the caller must stop using this file (see LeaseStore's failure policy).
  Result<void> append(std::string_view frames);
  /// fdatasync: the appended records are durable when it succeeds.
  Result<void> sync();

  const std::filesystem::path& path() const { return path_; }
  uint64_t generation() const { return generation_; }
  /// The file offset where the next frame goes.
  uint64_t size() const { return size_; }
  /// Bytes of records (size without the header).
  uint64_t recordBytes() const { return size_ - kJournalHeaderBytes; }

 private:
  JournalFile(std::shared_ptr<FileOps> fs, UniqueFd fd, std::filesystem::path path,
              uint64_t generation, uint64_t size)
      : fs_(std::move(fs)),
        fd_(std::move(fd)),
        path_(std::move(path)),
        generation_(generation),
        size_(size) {}

  std::shared_ptr<FileOps> fs_;
  UniqueFd fd_;
  std::filesystem::path path_;
  uint64_t generation_ = 0;
  uint64_t size_ = 0;
};

struct JournalFile::Opened {
  JournalFile file;
  JournalScan scan;
};

}  // namespace hostport::agent::store
